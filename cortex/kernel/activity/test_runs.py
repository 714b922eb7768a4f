"""Recognising a test run in a command line, and its summary line in the output.

For the host's activity (docs/design/activity.md): a Bash call that ran pytest, `npm test` (or
pnpm, yarn), `go test` or `cargo test` is recorded with the runner, the summary line the runner
printed, and whether it passed. Only the summary line is kept, never the output.
"""

from __future__ import annotations

import re
import shlex

_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
_WRAPPERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "npx", "time", "env", "nice"})
_PYTEST = re.compile(
    r"(?:=+ )?((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|"
    r"subtests? (?:passed|failed)|rerun)(?:, )?)+) in [0-9.]+s(?: \([0-9:.]+\))?(?: =+)?\s*$"
)
_PATTERNS = {
    "cargo": re.compile(r"test result: (?:ok|FAILED)\..*"),
    "go": re.compile(r"^(?:ok\s+\S+.*|FAIL(?:\s+\S+.*)?|PASS)$"),
    "npm": re.compile(
        r"^\s*(?:Tests:\s+.*total|Tests\s+.*\(\d+\)|\d+ passing.*|\d+ failing.*)\s*$"
    ),
}
SUMMARY_MAX = 240


def _words(part: str) -> list[str]:
    try:
        words = shlex.split(part)
    except ValueError:
        words = part.split()
    while words and ("=" in words[0] and not words[0].startswith("-")):
        words.pop(0)  # VAR=value prefixes
    while words and words[0].rsplit("/", 1)[-1] in _WRAPPERS:
        words.pop(0)
        if words and words[0] in {"run", "exec"}:
            words.pop(0)
    return words


def runner(command: str) -> str | None:
    """The test runner a command line runs, if it is one Cortex recognises."""
    for part in _SEPARATORS.split(command):
        words = _words(part)
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        rest = words[1:]
        if program in {"pytest", "py.test"} or (
            program.startswith("python") and rest[:2] == ["-m", "pytest"]
        ):
            return "pytest"
        if program in {"npm", "pnpm", "yarn", "bun"} and (
            rest[:1] == ["test"] or rest[:2] in (["run", "test"], ["t"])
        ):
            return "npm"
        if program == "go" and rest[:1] == ["test"]:
            return "go"
        if program == "cargo" and rest[:1] in (["test"], ["nextest"]):
            return "cargo"
    return None


def summary(kind: str, output: str) -> tuple[str | None, bool | None]:
    """The runner's summary line in `output` and whether it says something failed."""
    lines = output.splitlines()[-400:]
    if kind == "pytest":
        for line in reversed(lines):
            found = _PYTEST.search(line.strip())
            if found is not None:
                text = found.group(1).rstrip(", ")
                shown = line.strip().strip("= ")[:SUMMARY_MAX]
                return shown, bool(re.search(r"\d+ (failed|errors?)\b", text))
            if "no tests ran" in line:
                return line.strip().strip("= ")[:SUMMARY_MAX], None
        return None, None
    pattern = _PATTERNS.get(kind)
    if pattern is None:
        return None, None
    for line in reversed(lines):
        if pattern.search(line.strip()):
            text = line.strip()[:SUMMARY_MAX]
            failed = bool(re.search(r"FAIL|failed|failing|[1-9]\d* fail", text))
            return text, failed
    return None, None


def outcome(exit_status: int | None, failed: bool | None) -> str | None:
    """`passed`, `failed`, or None when neither the exit status nor the summary says."""
    if failed or (exit_status is not None and exit_status != 0):
        return "failed"
    if exit_status == 0 or failed is False:
        return "passed"
    return None
