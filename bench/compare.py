"""This working tree against an earlier build, in the same rounds: the guard against regressions.

    python bench/compare.py REV [--runs 30] [--mcp-calls 300]

REV is any git revision (`bdc75bb`, `v0.1.0`, `main~5`). Both builds are installed the way
README.md says (a regular, not editable, install) into virtual environments kept under
`$TMPDIR/cortex-builds/` (the earlier one by commit, so it is built once; the working tree's is
reinstalled on each run). Then:

- the per-call commands (`evidence add --json`, `status --json`, `status` as text into a pipe,
  `note --json`) of both builds and their floors run as whole processes in interleaved rounds,
  each build on a case of its own in the same repository;
- `bench/mcp_status.py` times both builds' warm `cortex_status` and the SDK floor, calls going
  round the three servers in turn.

It prints each command's median and p90, its ratio to its floor, and the ratio of this tree to
the earlier build (above 1.00 is slower). Nothing is judged here: the targets are in
docs/benchmarks.md. The machine is shared and noisy: trust ratios taken in one run, and repeat.
"""

from __future__ import annotations

import argparse
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


def builds_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "cortex-builds"
    path.mkdir(exist_ok=True)
    return path


def install(source: Path, venv: Path, *, fresh: bool) -> Path:
    """`venv`'s interpreter after installing `source` into it (with its dependencies once)."""
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([*pip, str(source)], check=True)
    elif fresh:
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(source)], check=True)
    return python


def build_of(revision: str) -> Path:
    """The interpreter of an installation of `revision` (built once, kept by commit)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    venv = builds_dir() / sha[:12]
    if not (venv / "bin" / "cortex").exists():
        shutil.rmtree(venv, ignore_errors=True)
        with tempfile.TemporaryDirectory() as scratch:
            archive = subprocess.run(
                ["git", "archive", "--format=tar", sha], cwd=ROOT, capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", scratch], input=archive.stdout, check=True)
            install(Path(scratch), venv, fresh=True)
    return venv / "bin" / "python"


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr.decode()}")
    return elapsed * 1000


Command = tuple[list[str], dict[str, str]]


def rounds(commands: dict[str, Command], cwd: Path, runs: int) -> dict[str, list[float]]:
    """Each command `runs` times, one of each per round, after three warm-up rounds."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for index in range(runs + 3):
        for name, (argv, env) in commands.items():
            elapsed = timed(argv, env, cwd)
            if index >= 3:
                samples[name].append(elapsed)
    return samples


def open_case(cortex: str, env: dict[str, str], repo: Path) -> str:
    proc = subprocess.run(
        [cortex, "case", "open", "compare the builds", "--json"],
        env=env,
        cwd=repo,
        capture_output=True,
        check=True,
    )
    task: str = json.loads(proc.stdout)["data"]["taskId"]
    return task


def make_repo(root: Path, env: dict[str, str]) -> Path:
    repo = root / "repo"
    for index in range(100):
        path = repo / f"pkg{index % 10}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n" * 20)
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, env=env, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=repo, env=env, check=True)
    return repo


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def per_call(current: Path, baseline: Path, runs: int) -> list[str]:
    """The per-call commands of both builds and their floors, in the same rounds."""
    with tempfile.TemporaryDirectory(prefix="cortex-compare-") as scratch:
        root = Path(scratch)
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        repo = make_repo(root, env)
        builds = {"this tree": current, "baseline": baseline}
        envs: dict[str, dict[str, str]] = {}
        tasks: dict[str, str] = {}
        for label, python in builds.items():
            envs[label] = {**env, "CORTEX_STATE_DIR": str(root / f"state-{len(envs)}")}
            tasks[label] = open_case(str(python.parent / "cortex"), envs[label], repo)
        case_dir = next((root / "state-0" / "sessions").glob(f"*/{tasks['this tree']}"))
        floor_dir = root / "floor-case"
        floor_dir.mkdir()
        shutil.copy(case_dir / "case.json", floor_dir / "case.json")
        py = str(current)
        commands: dict[str, Command] = {
            "floor: evidence add": (
                [py, str(HERE / "floor_evidence_add.py"), str(floor_dir), "x"],
                envs["this tree"],
            ),
            "floor: status": ([py, str(HERE / "floor_status.py"), str(case_dir)], env),
            # The same floors with msgspec loaded as the console script loads it.
            "lean floor: evidence add": (
                [py, str(HERE / "floor_evidence_add.py"), str(floor_dir), "x"],
                {**envs["this tree"], "BENCH_LEAN_MSGSPEC": "1"},
            ),
            "lean floor: status": (
                [py, str(HERE / "floor_status.py"), str(case_dir)],
                {**env, "BENCH_LEAN_MSGSPEC": "1"},
            ),
        }
        for label, python in builds.items():
            cortex, task, build_env = str(python.parent / "cortex"), tasks[label], envs[label]
            commands |= {
                f"{label}: evidence add --json": (
                    [cortex, "case", "evidence", "add", task, "--claim", "x", "--json"],
                    build_env,
                ),
                f"{label}: status --json": ([cortex, "case", "status", task, "--json"], build_env),
                f"{label}: status (text, a pipe)": ([cortex, "case", "status", task], build_env),
                f"{label}: note --json": ([cortex, "case", "note", task, "n", "--json"], build_env),
            }
        samples = rounds(commands, repo, runs)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floors = {
        "evidence add --json": "floor: evidence add",
        "note --json": "floor: evidence add",
        "status --json": "floor: status",
        "status (text, a pipe)": "floor: status",
    }
    lines = [
        "| command | median ms | p90 ms | ratio to floor | this tree / baseline |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, values in samples.items():
        label, _, what = name.partition(": ")
        floor = floors.get(what)
        if label == "lean floor":
            floor = f"floor: {what}"
        ratio = f"{medians[name] / medians[floor]:.2f}" if floor else "1.00"
        versus = ""
        if label == "this tree":
            versus = f"{medians[name] / medians[f'baseline: {what}']:.2f}"
        lines.append(f"| {name} | {medians[name]:.1f} | {p90(values):.1f} | {ratio} | {versus} |")
    text, json_ = medians["this tree: status (text, a pipe)"], medians["this tree: status --json"]
    lines += ["", f"Text into a pipe / `--json`, `status`, this tree: **{text / json_:.2f}**."]
    lean = [
        f"{what} {medians[f'this tree: {what} --json'] / medians[f'lean floor: {what}']:.2f}"
        for what in ("evidence add", "status")
    ]
    lines += [
        "",
        (
            "This tree against the floors with msgspec loaded as the console script loads it "
            f"(without typing_extensions): {', '.join(lean)}."
        ),
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the earlier build: any git revision")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--mcp-calls", type=int, default=300, help="0 leaves the MCP rows out")
    options = parser.parse_args()
    baseline = build_of(options.revision)
    current = install(ROOT, builds_dir() / "worktree", fresh=True)
    load = os.getloadavg()
    print(f"# This tree against {options.revision}")
    print()
    print(f"Load average at the start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.")
    print()
    print("\n".join(per_call(current, baseline, options.runs)))
    if options.mcp_calls:
        print()
        subprocess.run(
            [
                str(current),
                str(HERE / "mcp_status.py"),
                "--calls",
                str(options.mcp_calls),
                "--warmup",
                "50",
                "--baseline",
                str(baseline.parent / "cortex"),
            ],
            check=True,
        )


if __name__ == "__main__":
    main()
