"""`pytest` / `pytest:NAME`: a command verifier that reads pytest's JUnit XML report.

A receipt then says what was tested (counts, failing test ids), not only the exit code. The run
writes nothing into the tree (no cache, no bytecode), since new files would unbind the batch.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from cortex.cases.bounds import FAILING_TESTS_MAX, JUNIT_MAX, VERIFIER_TIMEOUT_DEFAULT
from cortex.verifiers.base import Context, Finding, Outcome, Status, split
from cortex.verifiers.command import run_configured

DEFAULT_ARGV = ("python", "-m", "pytest")


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
        argv = tuple(config.argv) if config else DEFAULT_ARGV
        timeout = config.timeout if config else VERIFIER_TIMEOUT_DEFAULT
        report_dir = tempfile.mkdtemp(prefix="cortex-junit-")
        report = os.path.join(report_dir, "report.xml")
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
            )
            if outcome.status in ("passed", "failed"):
                _apply_report(outcome, report)
            return outcome
        finally:
            shutil.rmtree(report_dir, ignore_errors=True)


def _apply_report(outcome: Outcome, report: str) -> None:
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
        return
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    failing: list[str] = []
    for test_id, status in cases:
        outcome.contracts[test_id] = status
        if status == "passed":
            counts["passed"] += 1
        elif status == "not_run":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
            failing.append(test_id)
    counts["errors"] = sum(1 for _, s in cases if s == "blocked")
    outcome.details.update(counts)
    outcome.summary += (
        f"; {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    )
    if failing and outcome.status == "passed":
        outcome.status = "failed"
        outcome.notes.append("pytest exited 0 but its report lists failures")
    if outcome.status == "passed" and counts["passed"] == 0:
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


def parse_junit(path: str) -> list[tuple[str, Status]]:
    """(test id, status) for every test case in a JUnit XML report (ValueError if unusable)."""
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
    return [(_test_id(case.attrib), _status(case)) for case in root.iter("testcase")]


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
