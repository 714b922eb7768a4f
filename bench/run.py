"""Benchmarks for the per-call path, each reported against a floor measured in the same run.

Run it with the interpreter of an installation made the way README.md says (a regular, not
editable, install: an editable one adds ~11 ms of import-hook overhead to every call):

    .venv/bin/python bench/run.py [--runs 40] [--big 1000000]

It builds a small git repository and a private state directory under a temp dir, then times
whole processes (spawn to exit) in interleaved rounds so that machine noise hits every command
alike, and reports medians, p90s and the ratio to the floor. The machine is noisy: trust the
ratios more than the absolute numbers. Output is Markdown for docs/benchmarks.md.
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
PY = sys.executable
CORTEX = str(Path(PY).parent / "cortex")


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        msg = f"{argv} failed: {proc.stderr.decode()}"
        raise SystemExit(msg)
    return elapsed * 1000


def rounds(
    commands: dict[str, list[str]], env: dict[str, str], cwd: Path, runs: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for name, argv in commands.items():  # warm-up: page cache, pyc files
        for _ in range(3):
            timed(argv, env, cwd)
        del name
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(timed(argv, env, cwd))
    return samples


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def table(samples: dict[str, list[float]], floor: str, title: str) -> list[str]:
    base = statistics.median(samples[floor])
    lines = [
        f"### {title}",
        "",
        "| command | median ms | p90 ms | ratio to floor |",
        "|---|---:|---:|---:|",
    ]
    for name, values in samples.items():
        median = statistics.median(values)
        lines.append(f"| {name} | {median:.1f} | {p90(values):.1f} | {median / base:.2f} |")
    return [*lines, ""]


def make_repo(root: Path, env: dict[str, str]) -> Path:
    repo = root / "small-repo"
    for index in range(100):
        path = repo / f"pkg{index % 10}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n" * 20)
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, env=env, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=repo, env=env, check=True)
    return repo


def cortex_json(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    proc = subprocess.run(
        [CORTEX, *args, "--json"], env=env, cwd=cwd, capture_output=True, check=True
    )
    result: dict[str, object] = json.loads(proc.stdout)["data"]
    return result


def grow_ledger(case_dir: Path, lines: int) -> None:
    """Append `lines` valid, chained evidence records and commit them in case.json directly.

    Records are one millisecond apart, after the case's last commit, so the ledger keeps the
    store's time order (docs/design/storage.md) as real commits would.
    """
    from cortex.cases import ledger
    from cortex.cases.ids import new_id
    from cortex.cases.records import CaseFile, Evidence, LedgerState, Source, decode, encode_pretty
    from cortex.kernel.kernel import format_time, parse_time

    case = decode((case_dir / "case.json").read_bytes(), CaseFile)
    state = case.ledgers["evidence"]
    prev = state.tip
    count, size = state.count, state.bytes
    start = parse_time(case.updated_at)
    stamp = case.updated_at
    with (case_dir / "evidence.jsonl").open("ab") as handle:
        batch: list[bytes] = []
        for index in range(lines):
            stamp = format_time(start + (index + 1) / 1000)
            record = Evidence(
                id=new_id("ev"),
                timestamp=stamp,
                source=Source(tool="bench", actor="bench"),
                claim=f"synthetic finding number {index} about module_{index % 100}.py",
                revision=case.revision,
                prev=prev,
            )
            line = ledger.format_line(record)
            prev = ledger.line_hash(line[:-1])
            batch.append(line)
            size += len(line)
            count += 1
            if len(batch) == 10_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    ordered = state.ordered or state.count == 0
    case.ledgers["evidence"] = LedgerState(
        count=count, bytes=size, tip=prev, last=stamp, ordered=ordered
    )
    case.updated_at = stamp
    (case_dir / "case.json").write_bytes(encode_pretty(case))


def append_latency(case_dir: Path, task: str, appends: int) -> list[float]:
    """In-process commit latency (lock, recover, read, append, fsyncs, snapshot), in ms."""
    from cortex.cases.ids import new_id
    from cortex.cases.records import Evidence, Source
    from cortex.cases.redact import Redactor
    from cortex.cases.store import CaseStore
    from cortex.kernel.kernel import format_time

    def now() -> str:
        return format_time(time.time())

    store = CaseStore(str(case_dir.parent), redactor=Redactor(), lock_timeout=10, now=now)
    samples = []
    for index in range(appends):
        start = time.perf_counter()
        with store.transaction(task, actor="bench", operation="case.evidence.add") as txn:
            txn.append(
                "evidence",
                Evidence(
                    id=new_id("ev"),
                    timestamp=now(),
                    source=Source(tool="bench"),
                    claim=f"append {index}",
                ),
            )
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def _baseline(script: str | None, name: str, args: list[str]) -> dict[str, list[str]]:
    """The same command from another installation, if one was given."""
    if script is None:
        return {}
    return {f"baseline: cortex {name} --json": [script, *args, "--json"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--big", type=int, default=1_000_000, help="lines in the big ledger")
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument(
        "--baseline",
        metavar="CORTEX",
        help="another installation's cortex script, timed beside this one in the same rounds "
        "(before/after a change)",
    )
    options = parser.parse_args()
    if not Path(CORTEX).exists():
        raise SystemExit(f"no cortex console script next to {PY}; install the project first")
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cortex-bench-") as scratch:
        root = Path(scratch)
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "LANG": "C.UTF-8",
            "CORTEX_STATE_DIR": str(root / "state"),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        repo = make_repo(root, env)
        task = str(cortex_json(["case", "open", "benchmark case"], env, repo)["taskId"])
        case_dir = next((root / "state" / "sessions").glob(f"*/{task}"))
        floor_dir = root / "floor-case"
        floor_dir.mkdir()
        shutil.copy(case_dir / "case.json", floor_dir / "case.json")

        add = rounds(
            {
                "python -c pass": [PY, "-c", "pass"],
                "python -c 'import msgspec'": [PY, "-c", "import msgspec"],
                "floor: flock, read, encode, fsynced append": [
                    PY,
                    str(HERE / "floor_evidence_add.py"),
                    str(floor_dir),
                    "x",
                ],
                "floor + commit protocol (chain, audit line, snapshot)": [
                    PY,
                    str(HERE / "floor_evidence_add.py"),
                    str(floor_dir),
                    "x",
                    "--protocol",
                ],
                "cortex case evidence add --json": [
                    CORTEX,
                    "case",
                    "evidence",
                    "add",
                    task,
                    "--claim",
                    "x",
                    "--json",
                ],
                **_baseline(
                    options.baseline,
                    "case evidence add",
                    ["case", "evidence", "add", task, "--claim", "x"],
                ),
            },
            env,
            repo,
            options.runs,
        )
        out += table(add, "floor: flock, read, encode, fsynced append", "evidence add (small repo)")
        status = rounds(
            {
                "floor: read, decode, print": [PY, str(HERE / "floor_status.py"), str(case_dir)],
                "cortex case status --json": [CORTEX, "case", "status", task, "--json"],
                **_baseline(options.baseline, "case status", ["case", "status", task]),
            },
            env,
            repo,
            options.runs,
        )
        out += table(status, "floor: read, decode, print", "status (small repo)")
        candidates = [
            "sys", "msgspec", "portalocker", "ulid", "rich.console", "git",
            "hashlib", "argparse", "pathlib", "subprocess",
        ]  # fmt: skip
        import importlib.util

        present = [m for m in candidates if importlib.util.find_spec(m.split(".")[0]) is not None]
        imports = rounds(
            {f"import {m}": [PY, "-c", f"import {m}"] for m in present},
            env,
            repo,
            max(10, options.runs // 2),
        )
        title = "import cost of candidate modules (ratio to a bare interpreter)"
        out += table(imports, "import sys", title)
        missing = sorted(set(candidates) - set(present))
        if missing:
            out += [f"Not installed here, so not measured: {', '.join(missing)}.", ""]

        grow_ledger(case_dir, 1000)
        small = append_latency(case_dir, task, options.appends)
        started = time.perf_counter()
        grow_ledger(case_dir, options.big - 1000 - options.appends)
        grown = time.perf_counter() - started
        big = append_latency(case_dir, task, options.appends)
        cli_big = rounds(
            {
                "cortex case evidence add (big ledger)": [
                    CORTEX,
                    "case",
                    "evidence",
                    "add",
                    task,
                    "--claim",
                    "x",
                    "--json",
                ],
                "cortex case status (big ledger)": [CORTEX, "case", "status", task, "--json"],
            },
            env,
            repo,
            options.runs,
        )
        size_mb = (case_dir / "evidence.jsonl").stat().st_size / 1e6
        ratio = statistics.median(big) / statistics.median(small)
        out += [
            (
                f"### Append cost against ledger size ({options.appends} in-process commits each; "
                f"ledger grown to {options.big:,} lines, {size_mb:.0f} MB, in {grown:.0f} s)"
            ),
            "",
            "| ledger | median ms | p90 ms |",
            "|---|---:|---:|",
            f"| 1,000 lines | {statistics.median(small):.3f} | {p90(small):.3f} |",
            f"| {options.big:,} lines | {statistics.median(big):.3f} | {p90(big):.3f} |",
            "",
            f"Ratio of medians, big / small: **{ratio:.2f}**.",
            "",
        ]
        out += table(
            {
                **cli_big,
                "reference: evidence add (small ledger, above)": add[
                    "cortex case evidence add --json"
                ],
            },
            "reference: evidence add (small ledger, above)",
            "Whole commands on the big ledger",
        )
    print("\n".join(out))


if __name__ == "__main__":
    main()
