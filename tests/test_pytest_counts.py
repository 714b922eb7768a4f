"""A pytest receipt counts what pytest's own summary says (issue 29).

A trial run that pytest summarised as `141 passed, 5 skipped, 160 subtests passed` was recorded
as `140 passed, 0 failed, 1 skipped`: the counts came from the JUnit report, which folds subtests
into their test, shows an xfail as a skip and an xpass as a pass. Each test here generates a
small project, runs real pytest through `cortex case verify`, and compares the receipt with the
summary line pytest printed for that same run (kept in the receipt's raw output).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, configure_verifiers, git, ready_to_verify
from verify_kit import approve, edit, raw_blob, receipts_by

pytestmark = pytest.mark.process  # its tests start cortex processes

MIXED = """\
import pytest


def test_ok():
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False


@pytest.mark.xfail(reason="known")
def test_unexpectedly_passes():
    pass


@pytest.mark.parametrize("x", [1, 2])
def test_each(x):
    assert x
"""

MODULE_SKIPPED = """\
import pytest

pytest.skip("the whole module", allow_module_level=True)


def test_a():
    pass


def test_b():
    pass
"""

SUBTESTS = """\
def test_three_subtests(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i >= 0
"""

FAILING_SUBTEST = """\
def test_one_subtest_fails(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i != 1
"""

ERRORING = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


def test_needs_broken(broken):
    pass
"""


def _has_builtin_subtests() -> bool:
    major = int(pytest.__version__.split(".")[0])
    return major >= 9


def project(repo: Path, env: dict[str, str], files: dict[str, str], *args: str) -> None:
    """Commit `files` under tests/ and a pytest verifier running them with this interpreter."""
    tests = repo / "tests"
    tests.mkdir(exist_ok=True)
    for name, text in files.items():
        (tests / name).write_text(text)
    git(repo, "add", "tests", env=env)
    git(repo, "commit", "-q", "-m", "tests", env=env)
    configure_verifiers(repo, env, {"pytest": [sys.executable, "-m", "pytest", *args]})
    approve(env)


def run(cli: Cli, repo: Path) -> tuple[dict[str, Any], str]:
    """Verify once; the pytest receipt and the summary line pytest printed in that run."""
    task = ready_to_verify(cli, verify=("pytest",))
    edit(repo)
    out = cli("case", "verify", task)
    receipt = receipts_by(out.envelope["data"])["pytest"]
    output = raw_blob(cli.env, task, receipt["artifact"]).decode()
    return receipt, summary_line(output)


def summary_line(output: str) -> str:
    """pytest's last line of counts, without the time (`2 failed, 4 passed`), as printed."""
    for line in reversed(output.splitlines()):
        found = re.fullmatch(r"=*\s*(.+?) in [0-9.]+s(?: \([^)]*\))?\s*=*", line.strip())
        if found:
            return found.group(1)
    pytest.fail(f"pytest printed no summary line:\n{output}")


def counted(summary: str) -> dict[str, int]:
    """`2 failed, 1 error` as {"failed": 2, "error": 1}: pytest's words, pytest's numbers."""
    return {
        words: int(number) for number, words in (part.split(" ", 1) for part in summary.split(", "))
    }


@pytest.mark.parametrize("quiet", [(), ("-q",)], ids=["default", "quiet"])
def test_markers_and_module_skips_are_counted_as_pytest_counts_them(
    cli: Cli, repo: Path, env: dict[str, str], quiet: tuple[str, ...]
) -> None:
    project(repo, env, {"test_mixed.py": MIXED, "test_module.py": MODULE_SKIPPED}, *quiet)
    receipt, summary = run(cli, repo)
    assert counted(summary) == {"passed": 3, "skipped": 2, "xfailed": 1, "xpassed": 1}
    assert receipt["claim"].endswith(f"; {summary}")
    assert receipt["status"] == "passed"


def test_an_error_is_counted_apart_from_failures(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    project(repo, env, {"test_mixed.py": MIXED, "test_error.py": ERRORING}, "-q")
    receipt, summary = run(cli, repo)
    assert counted(summary) == {"passed": 3, "skipped": 1, "xfailed": 1, "xpassed": 1, "error": 1}
    assert receipt["claim"].endswith(f"; {summary}")
    assert receipt["status"] == "failed"
    assert receipt["failing"] == ["tests/test_error.py::test_needs_broken"]


@pytest.mark.skipif(not _has_builtin_subtests(), reason="pytest before 9 has no subtests")
def test_subtests_are_counted_as_the_summary_counts_them(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    # -q: at pytest's default verbosity its summary does not count passing subtests at all.
    project(repo, env, {"test_sub.py": SUBTESTS, "test_mixed.py": MIXED}, "-q")
    receipt, summary = run(cli, repo)
    assert counted(summary)["subtests passed"] == 3
    assert counted(summary)["passed"] == 4
    assert receipt["claim"].endswith(f"; {summary}")
    assert receipt["status"] == "passed"


@pytest.mark.skipif(not _has_builtin_subtests(), reason="pytest before 9 has no subtests")
def test_a_failing_subtest_fails_the_receipt_and_is_named(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    project(repo, env, {"test_sub.py": FAILING_SUBTEST}, "-q")
    receipt, summary = run(cli, repo)
    assert receipt["claim"].endswith(f"; {summary}")
    assert receipt["status"] == "failed"
    assert receipt["failing"] == ["tests/test_sub.py::test_one_subtest_fails"]


def test_without_a_summary_line_the_report_counts_and_says_so(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """`-qq` prints no summary line: the JUnit counts stand in, and the receipt says so."""
    project(repo, env, {"test_mixed.py": MIXED}, "-qq")
    task = ready_to_verify(cli, verify=("pytest",))
    edit(repo)
    receipt = receipts_by(cli("case", "verify", task).envelope["data"])["pytest"]
    assert receipt["status"] == "passed"
    assert any("JUnit report" in note for note in receipt["notes"]), receipt["notes"]
    # The report cannot tell an xpass from a pass; it does tell an xfail from a skip.
    assert receipt["claim"].endswith("; 4 passed, 1 skipped, 1 xfailed (from the JUnit report)")


def test_a_pytest_that_cannot_start_is_blocked_not_failed(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """An interpreter without pytest exits 1 with no report: nothing was tested, nothing failed."""
    project(repo, env, {"test_mixed.py": MIXED})
    configure_verifiers(
        repo, env, {"pytest": [sys.executable, "-m", "no_such_module_for_cortex_tests"]}
    )
    task = ready_to_verify(cli, verify=("pytest",))
    edit(repo)
    receipt = receipts_by(cli("case", "verify", task).envelope["data"])["pytest"]
    assert receipt["status"] == "blocked", receipt
    assert any("no report" in note for note in receipt["notes"]), receipt["notes"]
