"""Re-run mutmut's surviving mutants in place, against a wider set of tests.

mutmut runs each mutant against the in-process tests that reach it; tests that reach redaction
through a subprocess (the CLI as a real process, `cortex serve`, the campaign) cannot see its
mutants, since a child process runs the original code. This script applies each survivor to
cortex/cases/redact.py (`mutmut apply`), runs the wider set, and puts the file back.

    .venv/bin/mutmut run && .venv/bin/python tests/mutation/survivors.py [--json FILE]

Run it from the checkout root after `mutmut run`; it restores redact.py whatever happens.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "cortex" / "cases" / "redact.py"
WIDER = [
    "tests/test_redact.py",
    "tests/test_secret_corpus.py",
    "tests/test_mcp_adversarial.py::test_secrets_come_back_redacted_on_both_surfaces",
    "tests/test_mcp_adversarial.py::test_configured_redaction_literals_cover_argument_errors",
    "tests/test_audit.py",
    "tests/test_tree_artifacts.py",
]
MUTMUT = str(Path(sys.executable).parent / "mutmut")


def survivors() -> list[str]:
    """The names `mutmut results` reports as survived."""
    out = subprocess.run(
        [MUTMUT, "results"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [line.split(":")[0].strip() for line in out.splitlines() if line.endswith("survived")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    options = parser.parse_args()
    original = TARGET.read_text()
    results: dict[str, str] = {}
    try:
        for name in survivors():
            subprocess.run([MUTMUT, "apply", name], cwd=ROOT, check=True, capture_output=True)
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *WIDER],
                cwd=ROOT,
                capture_output=True,
                check=False,
            )
            results[name] = "survived" if proc.returncode == 0 else "killed"
            print(f"{results[name]:9} {name}")
            TARGET.write_text(original)
    finally:
        TARGET.write_text(original)
    kept = [name for name, status in results.items() if status == "survived"]
    print(f"\n{len(results) - len(kept)} of {len(results)} survivors killed in place")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
