"""`case show` and `case timeline --json` on a case with a million ledger lines.

The floor, measured in the same run, is `wc -l` over the case's ledger files: reading every
committed byte once, with no parsing. Each command runs as a whole process (spawn to exit),
in interleaved rounds, from a small spawner process; peak RSS is the kernel's accounting of
each child (wait4), which cannot go below the spawner's own (about 10 MB).

Run it with a regular (not editable) install, as README.md says:

    .venv/bin/python bench/views.py [--lines 1000000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import grow_ledger  # noqa: E402 - the sibling script, not a package

SPAWNER = """
import json, os, sys, time
commands, runs, cwd = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.chdir(cwd)
null = os.open(os.devnull, os.O_WRONLY)
results = {name: [] for name in commands}
for round_ in range(runs + 1):  # the first round warms the page cache and is not reported
    for name, argv in commands.items():
        start = time.perf_counter()
        quiet = [(os.POSIX_SPAWN_DUP2, null, 1)]
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=quiet)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{argv} failed")
        if round_:
            results[name].append((elapsed, usage.ru_maxrss))
print(json.dumps(results))
"""
"""Runs the timed commands from a small process of its own: a child's peak RSS as the kernel
reports it starts from its parent's at the fork, so a spawner that grew the ledger would report
its own size for every command."""


def measure(
    commands: dict[str, list[str]], runs: int, env: dict[str, str], cwd: Path
) -> dict[str, list[tuple[float, int]]]:
    """Interleaved runs of every command: (seconds, peak RSS in KiB) each."""
    out = subprocess.run(
        [sys.executable, "-S", "-c", SPAWNER, json.dumps(commands), str(runs), str(cwd)],
        env=env,
        capture_output=True,
        check=True,
    )
    results: dict[str, list[tuple[float, int]]] = json.loads(out.stdout)
    return results


def _middle_line(path: Path) -> dict[str, str]:
    """The record halfway through a ledger: its id and time anchor the mid-file queries."""
    with path.open("rb") as handle:
        handle.seek(path.stat().st_size // 2)
        handle.readline()
        record: dict[str, str] = json.loads(handle.readline())
    return record


def _cursor(timeline: list[str], env: dict[str, str], cwd: Path) -> str:
    out = subprocess.run(timeline, env=env, cwd=cwd, capture_output=True, check=True)
    cursor: str = json.loads(out.stdout)["data"]["nextCursor"]
    return cursor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    cortex = str(Path(sys.executable).parent / "cortex")
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "CORTEX_STATE_DIR": str(Path(scratch) / "state"),
        }
        out = subprocess.run(
            [cortex, "case", "open", "a long investigation", "--json"],
            env=env,
            cwd=workspace,
            capture_output=True,
            check=True,
        )
        opened = json.loads(out.stdout)["data"]
        task, case_dir = opened["taskId"], Path(opened["path"])
        subprocess.run(
            [cortex, "case", "note", task, "first note", "--json"],
            env=env,
            cwd=workspace,
            capture_output=True,
            check=True,
        )
        started = time.perf_counter()
        grow_ledger(case_dir, options.lines)
        grown = time.perf_counter() - started
        ledgers = sorted(str(p) for p in case_dir.glob("*.jsonl"))
        size_mb = sum(os.path.getsize(p) for p in ledgers) / 1e6
        middle = _middle_line(case_dir / "evidence.jsonl")
        timeline = [cortex, "case", "timeline", task, "--json"]
        page_two = _cursor(timeline, env, workspace)
        commands = {
            "wc -l (floor)": ["wc", "-l", *ledgers],
            "case show --json": [cortex, "case", "show", task, "--json"],
            "case timeline --json": timeline,
            "timeline --since MID": [*timeline, "--since", middle["timestamp"]],
            "timeline --actor bench": [*timeline, "--actor", "bench"],
            "timeline --anchor MID_ID": [*timeline, "--anchor", middle["id"]],
            "timeline --cursor (page 2)": [*timeline, "--cursor", page_two],
        }
        results = measure(commands, options.runs, env, workspace)
    print(
        f"### show and timeline on {options.lines:,} ledger lines ({size_mb:.0f} MB, "
        f"grown in {grown:.0f} s; {options.runs} interleaved runs)\n"
    )
    print_rss_table(results, "wc -l (floor)", "ratio to floor")


def print_rss_table(
    results: dict[str, list[tuple[float, int]]], floor: str, ratio_heading: str
) -> None:
    """Median time, its ratio to `floor`'s and the peak RSS of each command, as Markdown."""
    times = {name: [t for t, _ in values] for name, values in results.items()}
    rss = {name: max(r for _, r in values) for name, values in results.items()}
    base = statistics.median(times[floor])
    print(f"| command | median ms | {ratio_heading} | peak RSS MB |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median * 1000:.1f} | {median / base:.2f}x | {rss[name] / 1024:.1f} |")


if __name__ == "__main__":
    main()
