"""Benchmark: what `cortex case verify` costs on a large repository, against `git status`.

    .venv/bin/python bench/verify.py [--files 50000] [--dirs 2000] [--runs 15] [--repo DIR]

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
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
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


def in_process(repo: Path, env: dict[str, str], task: str, runs: int) -> list[str]:
    """The same, without process start-up: the kernel's verify against its own captures."""
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.live import live_capture
    from cortex.kernel.verify import verify

    kernel = Kernel(str(repo), env, default_actor="bench")
    case = kernel.store.read_case(task)
    samples: dict[str, list[float]] = {
        "floor: git status --porcelain=v2 -uall": [],
        "one workspace capture (git status + hashing the listed files)": [],
        "verify() in process (two captures, the verifier, the commit)": [],
    }
    for _ in range(2):
        verify(kernel, task, lease_token=env["CORTEX_LEASE_TOKEN"])
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            ["git", "status", "--porcelain=v2", "-uall"],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        samples["floor: git status --porcelain=v2 -uall"].append(
            (time.perf_counter() - start) * 1000
        )
        start = time.perf_counter()
        live_capture(kernel, case)
        samples["one workspace capture (git status + hashing the listed files)"].append(
            (time.perf_counter() - start) * 1000
        )
        start = time.perf_counter()
        verify(kernel, task, lease_token=env["CORTEX_LEASE_TOKEN"])
        samples["verify() in process (two captures, the verifier, the commit)"].append(
            (time.perf_counter() - start) * 1000
        )
    return table(samples, "floor: git status --porcelain=v2 -uall", "verify in process, warm index")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--stale-runs", type=int, default=5)
    parser.add_argument("--repo", type=Path, help="reuse (or create) the repository here")
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
