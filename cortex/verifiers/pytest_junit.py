"""`pytest` / `pytest:NAME`: a command verifier that reads pytest's summary and JUnit report.

A receipt then says what was tested, not only the exit code: the counts of pytest's own summary
line (`3 passed, 2 skipped, 1 xfailed, 5 subtests passed`), as that run printed them, and from
the JUnit report each test's status (what a claim's selector rests on) and the failing ids. The
report alone miscounts: it folds subtests into their test and shows an xfail as a skip and an
xpass as a pass, so its counts stand in only when pytest printed no summary (`-qq`), and the
receipt says so. The run writes nothing into the tree (no cache, no bytecode), since new files
would unbind the batch.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping

from cortex.cases.bounds import FAILING_TESTS_MAX, JUNIT_MAX, VERIFIER_TIMEOUT_DEFAULT
from cortex.verifiers.base import Context, Finding, Outcome, Status, split
from cortex.verifiers.command import run_configured
from cortex.verifiers.programs import project_python


def default_argv(root: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """What `pytest` runs when no `[verifiers.pytest]` is configured: the project's own Python.

    Found when the verifier runs (`programs.project_python`: the project's .venv or venv, the
    active virtualenv, else python3 on PATH), never a bare `python` that may be any Python,
    Cortex's own included. `config`, `doctor` and the plan's answer show the same argv.
    """
    return (project_python(root, env)[0], "-m", "pytest")


class PytestVerifier:
    """The `pytest` kind."""

    kind = "pytest"
    version = "1"

    def check(self, requirement: str, context: Context) -> str | None:
        """`pytest` may use the default argv; `pytest:NAME` must be configured."""
        _, name = split(requirement)
        if name is not None and name not in context.verifiers:
            return f"no verifier {name!r} is configured: add [verifiers.{name}] with an argv"
        return None

    def run(self, requirement: str, context: Context) -> Outcome:
        """Run pytest with a private JUnit report and read it."""
        _, name = split(requirement)
        key = name or "pytest"
        config = context.verifiers.get(key)
        argv = tuple(config.argv) if config else default_argv(context.root, context.env)
        timeout = config.timeout if config else VERIFIER_TIMEOUT_DEFAULT
        report_dir = tempfile.mkdtemp(prefix="cortex-junit-")
        report = os.path.join(report_dir, "report.xml")
        stdout: list[bytes] = []
        try:
            outcome = run_configured(
                key,
                argv,
                context,
                timeout=timeout,
                kind="unit_test",
                extra_argv=(
                    f"--junitxml={report}",
                    "-o",
                    "junit_family=xunit1",
                    "-p",
                    "no:cacheprovider",
                ),
                extra_env={"PYTHONDONTWRITEBYTECODE": "1"},
                stdout=stdout,
            )
            if outcome.status in ("passed", "failed"):
                _apply_report(outcome, report, b"".join(stdout))
            return outcome
        finally:
            shutil.rmtree(report_dir, ignore_errors=True)


def _apply_report(outcome: Outcome, report: str, stdout: bytes) -> None:
    exit_code = outcome.details.get("exitCode", 0)
    if exit_code == 5:
        outcome.status = "inconclusive"
        outcome.notes.append("pytest collected no tests (exit 5)")
    elif exit_code in (2, 3, 4):
        outcome.status = "blocked"
        outcome.notes.append(f"pytest did not run the tests (exit {exit_code})")
    try:
        cases = parse_junit(report)
    except ValueError as exc:
        outcome.notes.append(f"no usable JUnit report: {exc}")
        if outcome.status == "passed":
            # An exit code without a report does not say what was tested.
            outcome.status = "inconclusive"
        elif outcome.status == "failed" and not os.path.exists(report):
            # pytest writes its report whenever it ran tests, failing or not: without one it did
            # not start (no pytest in that interpreter, a crash before collection).
            outcome.status = "blocked"
            outcome.notes.append(f"pytest exited {exit_code} before running any test")
        return
    failing = [test_id for test_id, status, _ in cases if status in ("failed", "blocked")]
    for test_id, status, _ in cases:
        outcome.contracts[test_id] = status
    summary = summary_counts(stdout)
    if summary is None:
        counts = _report_counts(cases)
        outcome.summary += f"; {_words(counts)} (from the JUnit report)"
        outcome.notes.append(
            "pytest printed no summary line (-qq?): the counts are its JUnit report's, which "
            "shows an xpass as a pass and does not count subtests"
        )
    else:
        text, counts = summary
        outcome.summary += f"; {text}"
    outcome.details.update(counts)
    if failing and outcome.status == "passed":
        outcome.status = "failed"
        outcome.notes.append("pytest exited 0 but its report lists failures")
    if outcome.status == "passed" and counts.get("passed", 0) == 0:
        outcome.status = "inconclusive"
        outcome.notes.append("no test passed (every test was skipped)")
    if failing:
        outcome.failing = failing
        shown = failing[:FAILING_TESTS_MAX]
        more = len(failing) - len(shown)
        claim = f"{len(failing)} failing test(s): " + ", ".join(shown)
        if more:
            claim += f" (and {more} more)"
        outcome.findings.append(Finding(kind="unit_test", claim=claim))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY = re.compile(
    r"=*\s*(?P<body>no tests ran|[0-9]+ [a-z][a-z ]*(?:, [0-9]+ [a-z][a-z ]*)*)"
    r" in [0-9]+(?:\.[0-9]+)?s(?: \([0-9:]+\))?\s*=*"
)
_KEYS = {"error": "errors", "warning": "warnings"}
"""pytest's singular words, by the key the plural gives (`1 error`, `2 errors`: `errors`)."""
_SUMMARY_LINES = 200
"""How far from the end of the kept output the summary line is looked for."""


def summary_counts(stdout: bytes) -> tuple[str, dict[str, int]] | None:
    """The summary line pytest printed last, without its time (`1 failed, 3 passed`), counted.

    Keys are pytest's words in camelCase (`passed`, `xfailed`, `errors`, `subtestsPassed`).
    None when the output has no summary line (`-qq`, `-p no:terminal`, a plugin that rewrote it).
    """
    lines = stdout.decode("utf-8", "replace").splitlines()[-_SUMMARY_LINES:]
    for line in reversed(lines):
        found = _SUMMARY.fullmatch(_ANSI.sub("", line).strip())
        if found is None:
            continue
        body = found.group("body")
        counts: dict[str, int] = {}
        if body != "no tests ran":
            for part in body.split(", "):
                number, words = part.split(" ", 1)
                first, *rest = words.split()
                key = _KEYS.get(first, first) + "".join(word.title() for word in rest)
                counts[key] = counts.get(key, 0) + int(number)
        return body, counts
    return None


def _report_counts(cases: list[tuple[str, Status, bool]]) -> dict[str, int]:
    counts = {"failed": 0, "passed": 0, "skipped": 0, "xfailed": 0, "errors": 0}
    for _, status, xfail in cases:
        if xfail:
            counts["xfailed"] += 1
        elif status == "not_run":
            counts["skipped"] += 1
        elif status == "blocked":
            counts["errors"] += 1
        else:
            counts[status] += 1
    return counts


def _words(counts: dict[str, int]) -> str:
    """Counts as pytest words them, in its order: `1 failed, 4 passed, 1 skipped, 2 errors`."""
    parts = []
    for key, number in counts.items():
        if number:
            word = "error" if key == "errors" and number == 1 else key
            parts.append(f"{number} {word}")
    return ", ".join(parts) or "no tests ran"


def parse_junit(path: str) -> list[tuple[str, Status, bool]]:
    """(test id, status, xfailed) for each test case of a JUnit XML report (ValueError if unusable).

    An xfail is reported as a skip of type `pytest.xfail`: its status is `not_run`, flagged.
    """
    from xml.etree import ElementTree as ET

    try:
        size = os.path.getsize(path)
    except OSError:
        msg = "pytest wrote no report"
        raise ValueError(msg) from None
    if size > JUNIT_MAX:
        msg = f"the report is {size} bytes, over {JUNIT_MAX}"
        raise ValueError(msg)
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - our own run's report, size-bounded
    except ET.ParseError as exc:
        msg = f"the report is not valid XML ({exc})"
        raise ValueError(msg) from None
    return [
        (_test_id(case.attrib), _status(case), _xfailed(case)) for case in root.iter("testcase")
    ]


def _xfailed(case: object) -> bool:
    return any(
        child.tag == "skipped" and child.attrib.get("type") == "pytest.xfail"
        for child in case  # type: ignore[attr-defined]
    )


def _status(case: object) -> Status:
    tags = {child.tag for child in case}  # type: ignore[attr-defined]
    if "error" in tags:
        return "blocked"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "not_run"
    return "passed"


def _test_id(attrib: dict[str, str]) -> str:
    """The pytest node id (`tests/test_a.py::TestX::test_y`) from xunit1 attributes."""
    name = attrib.get("name", "")
    classname = attrib.get("classname", "")
    file = attrib.get("file")
    if file:
        module = file.removesuffix(".py").replace("/", ".").replace("\\", ".")
        rest = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
        parts = [file.replace("\\", "/"), *(p for p in rest.split(".") if p), name]
        return "::".join(parts)
    return f"{classname}::{name}" if classname else name
