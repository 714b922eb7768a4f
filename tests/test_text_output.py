"""Text for people, as a pipe or a file gets it (issue 29).

In a pipe every key/value line was padded with spaces to 80 columns (16% of `open` and `status`
output was trailing blanks) and long values such as raw references were folded in the middle,
so an id copied from a log did not work. Off a terminal nothing is padded and nothing is
folded; at a terminal the grid still fits the width.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import Cli, configure_verifiers, ready_to_verify


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def assert_plain(text: str) -> None:
    padded = [line for line in lines_of(text) if line != line.rstrip()]
    assert padded == [], padded[:3]


def test_piped_text_is_neither_padded_nor_folded(cli: Cli) -> None:
    long_goal = "Fix the login redirect " + "so that it returns to the page it came from " * 3
    opened = cli("case", "open", long_goal, human=True)
    assert opened.code == 0, opened.stderr
    assert_plain(opened.stdout)
    task = cli("case", "list").data["items"][0]["taskId"]
    assert any(long_goal.strip() in line for line in lines_of(opened.stdout))
    record = cli(
        "case", "evidence", "add", task, "--claim", "suite fails", "--raw-file", "-",
        stdin=b"FAILED test_login\n",
    ).data["evidence"]  # fmt: skip
    shown = cli("case", "read-evidence", task, record["id"], human=True).stdout
    assert_plain(shown)
    # The reference is printed whole on one line, so it can be copied from a log.
    assert any(record["rawRef"] in line for line in lines_of(shown)), shown
    status = cli("case", "status", task, human=True).stdout
    assert_plain(status)
    assert any(long_goal.strip() in line for line in lines_of(status)), status
    for listing in (("case", "list"), ("case", "sessions"), ("case", "timeline", task)):
        assert_plain(cli(*listing, human=True).stdout)


@pytest.mark.process
def test_piped_verify_and_show_are_not_padded(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('ok')"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    verified = cli("case", "verify", task, human=True)
    assert verified.code == 0, verified.stderr
    assert_plain(verified.stdout)
    assert_plain(cli("case", "show", task, human=True).stdout)
    assert_plain(cli("config", human=True).stdout)
