"""Sharing benchmarks (docs/benchmarks.md, "Sharing"), each against its floor in the same run.

1. Incremental share: a case with RECORDS notes is shared; then, each round, one note is
   appended and `cortex case share` runs as a whole process. The objects it writes are counted
   (its answer, and `git rev-list --objects NEW ^OLD`), and the same new objects are written by
   `bench/floor_share.py` (the same git plumbing, inputs precomputed) into a twin repository and
   pushed to a twin remote in the same state. Target: O(1) objects, at most 1.5x the floor.
2. Fetch of 10 named cases (a pull request whose commits name them) on a fresh machine, from a
   remote holding those 10 case refs and from one holding them among 5,000. Target: at most 2x.

Run it from a checkout (it times `python -m cortex` with this checkout first on PYTHONPATH):

    .venv/bin/python bench/share.py [--runs 15] [--records 2000] [--refs 5000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
PYCACHE = Path(tempfile.gettempdir()) / "cortex-share-bench-pycache"
sys.path.insert(0, str(ROOT))


def git(cwd: Path, *args: str, env: dict[str, str], stdin: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode().strip()


def environment(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "LANG": "C.UTF-8",
        "CORTEX_STATE_DIR": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "PYTHONPATH": str(ROOT),
        # Compiled modules are cached outside the checkout, as an installation caches them:
        # without a cache every run would compile this checkout's sources again (~30 ms).
        "PYTHONPYCACHEPREFIX": str(PYCACHE),
    }


def make_remote(root: Path) -> Path:
    env = environment(root / "seed-env")
    seed = root / "seed"
    seed.mkdir(parents=True)
    git(seed, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    (seed / "app.py").write_text("print('hello')\n")
    (seed / "cortex.toml").write_text("[share]\nenabled = true\n")
    git(seed, "add", "app.py", "cortex.toml", env=env)
    git(seed, "commit", "-q", "-m", "initial", env=env)
    remote = root / "remote.git"
    git(root, "clone", "-q", "--bare", str(seed), str(remote), env=env)
    return remote


def machine(root: Path, remote: Path) -> tuple[dict[str, str], Path]:
    env = environment(root)
    repo = root / "repo"
    git(root, "clone", "-q", f"file://{remote}", str(repo), env=env)
    return env, repo


def inprocess(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    from cortex.main import main

    out = io.StringIO()
    code = main([*args, "--json"], env=env, cwd=str(cwd), stdout=out, stderr=io.StringIO())
    if code != 0:
        raise SystemExit(f"cortex {args} failed: {out.getvalue()}")
    data: dict[str, object] = json.loads(out.getvalue())["data"]
    return data


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stdout.decode()}{proc.stderr.decode()}")
    return elapsed, proc.stdout


def floor_inputs(repo: Path, env: dict[str, str], new: str, old: str, inputs: Path) -> int:
    """Write what the floor needs to make the same objects as NEW over OLD; return their count."""
    shutil.rmtree(inputs, ignore_errors=True)
    (inputs / "blobs").mkdir(parents=True)
    listing = git(repo, "rev-list", "--objects", new, f"^{old}", env=env).splitlines()
    oids = [line.split()[0] for line in listing]
    trees: list[str] = []
    for index, oid in enumerate(oids):
        kind = git(repo, "cat-file", "-t", oid, env=env)
        if kind == "blob":
            data = subprocess.run(
                ["git", "cat-file", "blob", oid], cwd=repo, env=env, capture_output=True, check=True
            ).stdout
            (inputs / "blobs" / f"{index:06d}").write_bytes(data)
        elif kind == "tree":
            trees.append(git(repo, "ls-tree", oid, env=env))
    # rev-list lists a tree before the trees in it: mktree needs them the other way round.
    (inputs / "trees.txt").write_text("\n\n".join(reversed(trees)) + "\n")
    message = git(repo, "log", "-1", "--format=%B", new, env=env)
    (inputs / "message.txt").write_text(message + "\n")
    return len(oids)


def incremental(base: Path, runs: int, records: int) -> list[str]:
    remote = make_remote(base / "inc")
    env, repo = machine(base / "inc" / "a", remote)
    task = str(inprocess(["case", "open", "Benchmark the share"], env, repo)["taskId"])
    for index in range(records):
        inprocess(["case", "note", task, f"note {index} about module_{index % 100}.py"], env, repo)
    inprocess(["case", "share", task], env, repo)
    ref = f"refs/cortex/cases/{task}"
    twin_remote = base / "inc" / "twin.git"
    git(base / "inc", "clone", "-q", "--bare", str(remote), str(twin_remote), env=env)
    twin = base / "inc" / "twin"
    git(base / "inc", "clone", "-q", str(twin_remote), str(twin), env=env)
    cortex, floor, objects, counted = [], [], [], []
    inputs = base / "inc" / "inputs"
    for index in range(runs):
        old = git(repo, "rev-parse", ref, env=env)
        git(twin, "fetch", "-q", str(repo), f"+{ref}:{ref}", env=env)
        git(twin, "push", "-q", "--force", "origin", f"{ref}:{ref}", env=env)
        inprocess(["case", "note", task, f"round {index}"], env, repo)
        ms, out = timed([PY, "-m", "cortex", "case", "share", task, "--json"], env, repo)
        answer = json.loads(out)["data"]["cases"][0]
        cortex.append(ms)
        objects.append(int(answer["objects"]))
        new = git(repo, "rev-parse", ref, env=env)
        counted.append(floor_inputs(repo, env, new, old, inputs))
        argv = [PY, str(HERE / "floor_share.py"), str(twin), str(inputs), ref, old, "origin"]
        ms, out = timed(argv, env, twin)
        floor.append(ms)
        twin_tree = git(twin, "rev-parse", f"{json.loads(out)['commit']}^{{tree}}", env=env)
        if twin_tree != git(repo, "rev-parse", f"{new}^{{tree}}", env=env):
            raise SystemExit("the floor made another tree than cortex")
    ratio = statistics.median(cortex) / statistics.median(floor)
    return [
        f"### Incremental share after one appended record ({records} notes, {runs} rounds)",
        "",
        "| what | median ms | p90 ms | ratio to floor |",
        "|---|---:|---:|---:|",
        _row("floor: the same git plumbing, inputs precomputed, + push", floor, floor),
        _row("cortex case share --json", cortex, floor),
        "",
        (
            f"Objects written per share: {sorted(set(objects))} (cortex's count), "
            f"{sorted(set(counted))} (`git rev-list --objects NEW ^OLD`). Ratio {ratio:.2f}."
        ),
        "",
    ]


def _row(name: str, values: list[float], floor: list[float]) -> str:
    median = statistics.median(values)
    p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else median
    return f"| {name} | {median:.1f} | {p90:.1f} | {median / statistics.median(floor):.2f} |"


def synthetic_refs(remote: Path, env: dict[str, str], count: int) -> None:
    """`count` more case refs on the remote: small orphan commits, made with one fast-import."""
    from cortex.cases.ids import new_id

    stream = io.BytesIO()
    meta = b'{"format":"cortex-share/1"}\n'
    stream.write(b"blob\nmark :1\ndata %d\n" % len(meta) + meta + b"\n")
    for index in range(count):
        task = new_id("task")
        message = f"cortex case {task}: synthetic".encode()
        stream.write(f"commit refs/cortex/cases/{task}\n".encode())
        stream.write(b"committer Bench <bench@example.invalid> 1700000000 +0000\n")
        stream.write(b"data %d\n" % len(message) + message + b"\n")
        stream.write(b"M 100644 :1 meta.json\n")
        stream.write(f"M 100644 inline n{index}\ndata 1\n{index % 10}\n".encode())
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=remote,
        env=env,
        input=stream.getvalue(),
        check=True,
    )


def fetching(base: Path, runs: int, refs: int) -> list[str]:
    small = make_remote(base / "fetch")
    env, repo = machine(base / "fetch" / "agent", small)
    tasks = []
    for index in range(10):
        task = str(inprocess(["case", "open", f"Case {index}"], env, repo)["taskId"])
        for note in range(20):
            inprocess(["case", "note", task, f"note {note}"], env, repo)
        tasks.append(task)
    inprocess(["case", "share", "--all"], env, repo)
    (repo / "app.py").write_text("print('pr')\n")
    git(repo, "add", "app.py", env=env)
    trailers = [arg for t in tasks for arg in ("--trailer", f"Cortex-Case: {t}")]
    git(repo, "commit", "-q", "-m", "the pull request", *trailers, env=env)
    git(repo, "push", "-q", "origin", "HEAD:refs/pull/1/head", env=env)
    big = base / "fetch" / "big.git"
    git(base / "fetch", "clone", "-q", "--mirror", str(small), str(big), env=env)
    synthetic_refs(big, env, refs - 10)
    held = len(git(big, "for-each-ref", "refs/cortex/cases/", env=env).splitlines())
    samples: dict[str, list[float]] = {"10": [], str(held): []}
    for index in range(runs):
        for label, remote in (("10", small), (str(held), big)):
            root = base / "fetch" / f"reviewer-{label}-{index}"
            reviewer_env, reviewer = machine(root, remote)
            ms, out = timed(
                [PY, "-m", "cortex", "case", "fetch", "--pr", "1", "--json"], reviewer_env, reviewer
            )
            fetched = json.loads(out)["data"]["cases"]
            if len(fetched) != 10:
                raise SystemExit(f"fetched {len(fetched)} cases, not 10")
            samples[label].append(ms)
            shutil.rmtree(root)
    ratio = statistics.median(samples[str(held)]) / statistics.median(samples["10"])
    return [
        f"### fetch --pr of 10 named cases on a fresh machine ({runs} rounds)",
        "",
        "| remote holds | median ms | p90 ms | ratio to 10 refs |",
        "|---|---:|---:|---:|",
        _row("10 case refs", samples["10"], samples["10"]),
        _row(f"{held} case refs", samples[str(held)], samples["10"]),
        "",
        f"Ratio {ratio:.2f}.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--refs", type=int, default=5000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cortex-share-bench-") as scratch:
        base = Path(scratch)
        out = incremental(base, options.runs, options.records)
        out += fetching(base, options.runs, options.refs)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
