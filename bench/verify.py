"""Benchmark: what `cortex case verify` costs on a large repository, against `git status`.

    .venv/bin/python bench/verify.py [--files 50000] [--dirs 2000] [--runs 15] [--repo DIR]
    .venv/bin/python bench/verify.py --scaling [--runs 15]

Builds (or reuses, with --repo) a synthetic repository like the one in perf-floors: FILES
tracked 4 KiB text files in DIRS directories, then 50 modified files (5 of them binary
appends), 20 untracked and 200 ignored files. A change case is opened on it whose plan requires
one command verifier that runs `true`, so the time measured is the kernel's: two workspace
captures, the verifier spawn, the batch commit.

Two states:
- warm: the index's stat data is fresh (a plain `git status` ran), page cache warm;
- stale: every tracked file is touched (mtime only) before each run, so git must re-read every
  file to know it is unchanged.

Floors, measured in the same rounds: `git status --porcelain=v2 -uall` (what a user runs) and,
for the stale state, the same with `--no-optional-locks` (git may not save the refreshed index,
as for cortex). Output is Markdown for docs/benchmarks.md.

In process, the capture's tree id (docs/design/verification.md §1.1) is timed on its own too:
the part of a capture after `git status` has answered (hashing the listed files with
`git hash-object`, reading trees with `git cat-file`, rebuilding them). `--scaling` builds
repositories of 1k, 10k, 50k and 200k files (25 per directory, three levels of at most 20
directories, made with `git fast-import`) with 50 modified files each, and reports status,
capture and tree id side by side: the tree id must grow with the changed paths, not with the
repository.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import table  # bench/ is the script's directory, so on sys.path

PY = sys.executable
CORTEX = str(Path(PY).parent / "cortex")
ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789 \n"


def git(repo: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)


def build(repo: Path, files: int, dirs: int, env: dict[str, str]) -> list[Path]:
    """The synthetic repository; returns its tracked files."""
    rng = random.Random(42)
    repo.mkdir(parents=True)
    git(repo, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    paths = []
    for index in range(files):
        path = repo / f"d{index % dirs:04d}" / f"f{index:06d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(bytes(rng.choices(ALPHABET, k=4096)))
        paths.append(path)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "cortex.toml").write_text('[verifiers.noop]\nargv = ["true"]\n')
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "init", env=env)
    for number, path in enumerate(rng.sample(paths, 50)):
        with path.open("ab") as handle:
            handle.write(os.urandom(64) if number < 5 else b"changed\n")
    for number in range(20):
        (repo / f"d{number % dirs:04d}" / f"new{number}.txt").write_bytes(b"new\n" * 100)
    (repo / "build").mkdir()
    for number in range(200):
        name = f"build/o{number}.bin" if number % 2 else f"d{number % dirs:04d}/x{number}.log"
        (repo / name).write_bytes(b"ignored\n" * 100)
    return paths


def cortex(args: list[str], env: dict[str, str], repo: Path) -> str:
    proc = subprocess.run(
        [CORTEX, *args, "--json"], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"cortex {args} failed: {proc.stdout} {proc.stderr}")
    import json

    return str(json.loads(proc.stdout)["data"].get("taskId", ""))


def open_case(repo: Path, env: dict[str, str]) -> str:
    import json

    task = cortex(["case", "open", "benchmark verify"], env, repo)
    out = subprocess.run(
        [CORTEX, "case", "evidence", "add", task, "--claim", "baseline", "--json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    evidence = json.loads(out.stdout)["data"]["evidence"]["id"]
    plan = ["case", "plan", task, "--hypothesis", "h :: d", "--support", f"1={evidence}"]
    plan += ["--uncertainty", "none", "--file", "d0000/", "--boundary-reason", "bench"]
    plan += ["--verify", "command:noop"]
    cortex(plan, env, repo)
    began = subprocess.run(
        [CORTEX, "case", "begin-change", task, "--actor", "bench", "--ttl", "1h", "--json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    # Every later verify presents the lease token, as the holder's shell would.
    env["CORTEX_LEASE_TOKEN"] = json.loads(began.stdout)["data"]["leaseToken"]
    return task


def timed(argv: list[str], env: dict[str, str], repo: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stdout!r} {proc.stderr!r}")
    return elapsed


def touch_all(paths: list[Path]) -> None:
    now = time.time()
    for path in paths:
        os.utime(path, (now, now))


def measure(
    commands: dict[str, list[str]],
    env: dict[str, str],
    repo: Path,
    runs: int,
    before: list[Path] | None,
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # warm-up
        timed(argv, env, repo)
    for _ in range(runs):
        for name, argv in commands.items():
            if before is not None:
                touch_all(before)
            samples[name].append(timed(argv, env, repo))
    return samples


FLOOR = "floor: git status --porcelain=v2 -uall"
CAPTURE = "one workspace capture, with the tree id"
TREE = "of which the tree id, after status answered"
VERIFY = "verify() in process (two captures, the verifier, the commit)"


class TreeTimer:
    """Times the capture's tree-id step (`working_tree_id`) by wrapping it in this process."""

    def __init__(self) -> None:
        from cortex.workspace import working_tree as module

        self.module = module
        self.original = module.working_tree_id  # timing one step of a capture
        self.last = 0.0
        self.trees: list[str | None] = []

        def timed_tree(*args: object, **kwargs: object) -> tuple[str, str]:
            start = time.perf_counter()
            try:
                return self.original(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                self.last = (time.perf_counter() - start) * 1000

        module.working_tree_id = timed_tree


def status_floor(repo: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["git", "status", "--porcelain=v2", "-uall"],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return (time.perf_counter() - start) * 1000


def in_process(repo: Path, env: dict[str, str], task: str, runs: int) -> list[str]:
    """The same, without process start-up: the kernel's verify against its own captures."""
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.proof.live import live_capture
    from cortex.kernel.proof.verify import verify

    timer = TreeTimer()
    kernel = Kernel(str(repo), env, default_actor="bench")
    case = kernel.store.read_case(task)
    samples: dict[str, list[float]] = {FLOOR: [], CAPTURE: [], TREE: [], VERIFY: []}
    for _ in range(2):
        verify(kernel, task, lease_token=env["CORTEX_LEASE_TOKEN"])
    trees = set()
    reason = None
    for _ in range(runs):
        samples[FLOOR].append(status_floor(repo, env))
        start = time.perf_counter()
        taken = live_capture(kernel, case)
        samples[CAPTURE].append((time.perf_counter() - start) * 1000)
        samples[TREE].append(timer.last)
        trees.add(taken.tree)
        reason = taken.tree_reason
        start = time.perf_counter()
        verify(kernel, task, lease_token=env["CORTEX_LEASE_TOKEN"])
        samples[VERIFY].append((time.perf_counter() - start) * 1000)
    if None in trees:
        raise SystemExit(f"a capture gave no tree id: {reason}")
    lines = table(samples, FLOOR, "verify in process, warm index")
    floor = statistics.median(samples[FLOOR])
    capture_ratio = statistics.median(samples[CAPTURE]) / floor
    verify_ratio = statistics.median(samples[VERIFY]) / floor
    lines.append(
        f"Targets (issue 14): one capture with the tree id <= 1.20x: {capture_ratio:.2f}x "
        f"({'met' if capture_ratio <= 1.2 else 'NOT met'}); verify in process <= 2.50x: "
        f"{verify_ratio:.2f}x ({'met' if verify_ratio <= 2.5 else 'NOT met'})."
    )
    return [*lines, ""]


def fast_import(repo: Path, files: int, env: dict[str, str]) -> list[str]:
    """A repository of `files` 64-byte files, committed through one `git fast-import`."""
    repo.mkdir(parents=True)
    git(repo, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    rng = random.Random(files)
    leaves = max(1, files // 25)
    stream = [b"commit refs/heads/main\n", b"committer bench <b@example.invalid> 0 +0000\n"]
    stream += [b"data 4\ninit\n"]
    paths = []
    for index in range(files):
        # Three levels of at most 20 directories, 25 files in each leaf: every directory has
        # the same size at every repository size, and only their number grows.
        leaf = index % leaves
        path = f"a{leaf // 400:02d}/b{leaf // 20 % 20:02d}/c{leaf % 20:02d}/f{index:06d}.txt"
        paths.append(path)
        data = bytes(rng.choices(ALPHABET, k=64))
        stream.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        env=env,
        input=b"".join(stream),
        check=True,
    )
    git(repo, "reset", "-q", "--hard", "main", env=env)
    return paths


def scaling(runs: int, env: dict[str, str], scratch: Path) -> list[str]:
    """Status, capture and the tree id at 1k, 10k, 50k and 200k files, 50 changed in each."""
    from cortex.workspace.capture import capture

    timer = TreeTimer()
    rows: dict[str, list[float]] = {}
    lines = [
        "### the tree id against repository size (50 modified files each, warm index)",
        "",
        (
            "| files | git status median ms | capture median ms | capture / status "
            "| tree id median ms | tree id p90 ms |"
        ),
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for files in (1_000, 10_000, 50_000, 200_000):
        repo = scratch / f"scale-{files}"
        paths = fast_import(repo, files, env)
        for path in random.Random(7).sample(paths, 50):
            with (repo / path).open("ab") as handle:
                handle.write(b"changed\n")
        git(repo, "status", env=env)  # a fresh index
        rows = {FLOOR: [], CAPTURE: [], TREE: []}
        for _ in range(3):
            capture(str(repo), env)
        for _ in range(runs):
            rows[FLOOR].append(status_floor(repo, env))
            start = time.perf_counter()
            taken = capture(str(repo), env)
            rows[CAPTURE].append((time.perf_counter() - start) * 1000)
            rows[TREE].append(timer.last)
            if taken.tree is None:
                raise SystemExit(f"no tree id at {files} files: {taken.tree_reason}")
        floor = statistics.median(rows[FLOOR])
        whole = statistics.median(rows[CAPTURE])
        tree = statistics.median(rows[TREE])
        lines.append(
            f"| {files:,} | {floor:.1f} | {whole:.1f} | {whole / floor:.2f} | {tree:.2f} "
            f"| {statistics.quantiles(rows[TREE], n=10)[-1]:.2f} |"
        )
        shutil.rmtree(repo, ignore_errors=True)
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--stale-runs", type=int, default=5)
    parser.add_argument("--repo", type=Path, help="reuse (or create) the repository here")
    parser.add_argument("--scaling", action="store_true", help="only the tree id at 1k-200k files")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cortex-bench-verify-"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch / "home"),
        "LANG": "C.UTF-8",
        "CORTEX_STATE_DIR": str(scratch / "state"),
        "XDG_CONFIG_HOME": str(scratch / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "CORTEX_APPROVE_COMMANDS": "1",
    }
    if os.environ.get("PYTHONPATH"):  # a checkout under test, for the `cortex` processes too
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if args.scaling:
        try:
            print("\n".join(scaling(args.runs, env, scratch)))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    try:
        repo = args.repo or scratch / "repo"
        started = time.perf_counter()
        if not (repo / ".git").is_dir():
            build(repo, args.files, args.dirs, env)
        built = time.perf_counter() - started
        paths = sorted(p for p in repo.glob("d*/f*.txt"))
        task = open_case(repo, env)
        status = ["git", "status", "--porcelain=v2", "-uall"]
        quiet = ["git", "--no-optional-locks", "status", "--porcelain=v2", "-uall"]
        verify = [CORTEX, "case", "verify", task, "--json"]
        print(f"<!-- repo with {len(paths)} tracked files, ready in {built:.1f} s -->\n")
        git(repo, "status", env=env)  # a fresh index: the warm state
        warm = measure(
            {
                "floor: git status --porcelain=v2 -uall": status,
                "python -c pass": [PY, "-c", "pass"],
                "cortex case verify (command verifier `true`)": verify,
            },
            env,
            repo,
            args.runs,
            None,
        )
        lines = table(
            warm,
            "floor: git status --porcelain=v2 -uall",
            f"verify, warm index ({len(paths):,} files, 70 dirty)",
        )
        stale = measure(
            {
                "floor: git --no-optional-locks status --porcelain=v2 -uall": quiet,
                "cortex case verify (command verifier `true`)": verify,
            },
            env,
            repo,
            args.stale_runs,
            paths,
        )
        lines += table(
            stale,
            "floor: git --no-optional-locks status --porcelain=v2 -uall",
            "verify, stale index (every tracked file touched before each run)",
        )
        git(repo, "status", env=env)
        lines += in_process(repo, env, task, args.runs)
        print("\n".join(lines))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
