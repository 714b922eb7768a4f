"""`case report --html` against `case show --json` on a case with a million ledger lines.

The target (docs/design/report.md): the report costs at most 1.5x `show --json` on the same
case, in the same run, within 64 MB peak RSS. The case is verified (one batch of receipts, so
the report has a verdict, receipts and previews to lay out), then its evidence ledger is grown
to `--lines` valid, chained records (bench/run.py). Each command runs as a whole process, in
interleaved rounds, from the small spawner of bench/views.py; `--md` and `--comment` are timed
too. The checkout's own code runs (`python -m cortex` with this checkout first on PYTHONPATH),
so the numbers are those of the tree being measured.

    .venv/bin/python bench/report.py [--lines 1000000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import grow_ledger  # noqa: E402 - the sibling script, not a package
from views import measure, print_rss_table  # noqa: E402


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)
    data: dict[str, object] = json.loads(out.stdout)["data"]
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    cortex = [sys.executable, "-m", "cortex"]
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "CORTEX_STATE_DIR": str(Path(scratch) / "state"),
            "CORTEX_APPROVE_COMMANDS": "1",
            "PYTHONPATH": str(HERE.parent),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True)

        git("-c", "init.defaultBranch=main", "init", "-q")
        (workspace / "app.py").write_text("print('hello')\n")
        (workspace / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
        git("add", ".")
        git("commit", "-q", "-m", "initial")
        opened = _run(
            [*cortex, "case", "open", "a long investigation", "--mode", "investigate", "--json"],
            env,
            workspace,
        )
        task, case_dir = str(opened["taskId"]), Path(str(opened["path"]))
        first = _run(
            [*cortex, "case", "evidence", "add", task, "--claim", "app.py", "--json"],
            env,
            workspace,
        )
        evidence = first["evidence"]["id"]  # type: ignore[index]
        _run(
            [*cortex, "case", "plan", task, "--hypothesis", "h :: d", "--support",
             f"1={evidence}", "--uncertainty", "none", "--verify", "command:unit", "--json"],
            env,
            workspace,
        )  # fmt: skip
        _run([*cortex, "case", "verify", task, "--json"], env, workspace)
        started = time.perf_counter()
        grow_ledger(case_dir, options.lines)
        grown = time.perf_counter() - started
        size_mb = sum(p.stat().st_size for p in case_dir.glob("*.jsonl")) / 1e6
        out = Path(scratch) / "out"
        out.mkdir()
        commands = {
            "case show --json": [*cortex, "case", "show", task, "--json"],
            "case report --html FILE": [*cortex, "case", "report", task, "--html",
                                        str(out / "r.html")],
            "case report --html FILE --json": [*cortex, "case", "report", task, "--html",
                                               str(out / "j.html"), "--json"],
            "case report --format md": [*cortex, "case", "report", task, "--format", "md"],
            "case report --comment": [*cortex, "case", "report", task, "--comment"],
        }  # fmt: skip
        results = measure(commands, options.runs, env, workspace)
        size = (out / "r.html").stat().st_size
    print(
        f"### report and show on {options.lines:,} evidence lines ({size_mb:.0f} MB, grown in "
        f"{grown:.0f} s; {options.runs} interleaved runs; the HTML file: {size:,} bytes)\n"
    )
    print_rss_table(results, "case show --json", "ratio to show --json")


if __name__ == "__main__":
    main()
