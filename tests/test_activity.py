"""What the host saw the agent do: capture, redaction, the boundary warning, subagents, and the
agent's claims set against it (docs/design/activity.md).

The cheap hooks run in process through `cortex.main.main` here, as the launcher runs them: the
record is written by a forked child, and every reader waits for it through `activity.lock`.
tests/test_host_claude.py drives the same hooks through the real Claude Code.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, case_path, configure_verifiers

from cortex.cases import activity
from cortex.main import main

SESSION = "ac71f000-0000-4000-8000-000000000001"
SECRET = "ghp_" + "Zq9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98"
"""A made-up token in GitHub's real shape."""


def hook(event: str, env: dict[str, str], repo: Path, **fields: Any) -> str:
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": event, **fields}
    out = io.StringIO()
    code = main(["hook", event], env=env, cwd=str(repo), stdin=io.BytesIO(json.dumps(payload)
                .encode()), stdout=out, stderr=io.StringIO())  # fmt: skip
    assert code == 0
    return out.getvalue()


def records(env: dict[str, str], task: str) -> list[activity.Activity]:
    log = activity.read(str(case_path(env, task)), task)
    assert log.problems == []
    return log.records


@pytest.fixture
def changing(cli: Cli, env: dict[str, str], repo: Path) -> str:
    """A change case in `changing`, its boundary app.py, the lease taken in the session."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('1 passed')"]})
    cli.env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = cli.open("Fix the login redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    assert cli(
        "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--verify", "command:unit", "--file", "app.py", "--boundary-reason", "it is here",
    ).code == 0  # fmt: skip
    shell = Cli({**cli.env, "CLAUDE_CODE_SESSION_ID": SESSION}, repo)
    assert shell("case", "begin-change", task).code == 0
    return task


def failing_pytest(env: dict[str, str], repo: Path) -> None:
    hook(
        "PostToolUseFailure", env, repo, tool_name="Bash",
        tool_input={"command": "python -m pytest -q tests/", "description": "run the tests"},
        error="Exit code 1\n.F.\nFAILED tests/test_app.py::test_login\n1 failed, 2 passed in 0.12s",
        duration_ms=812,
    )  # fmt: skip


def test_a_failing_test_run_is_recorded_with_its_summary(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    failing_pytest(env, repo)
    [run] = records(env, changing)
    assert run.tool == "Bash"
    assert run.command == "python -m pytest -q tests/"
    assert (run.runner, run.outcome, run.exit, run.failed) == ("pytest", "failed", 1, True)
    assert run.summary == "1 failed, 2 passed in 0.12s"
    assert run.duration_ms == 812
    assert run.actor == "claude-ac71f000"
    assert run.n == 1
    assert run.prev == activity.genesis(changing)
    raw = (case_path(env, changing) / "activity.jsonl").read_text()
    assert "FAILED tests/test_app.py" not in raw  # the output is never kept, only the summary


def test_nothing_is_recorded_without_a_case_in_changing(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    task = cli.open()  # orienting
    failing_pytest(env, repo)
    assert not (case_path(env, task) / "activity.jsonl").exists()
    assert not (Path(env["CORTEX_STATE_DIR"]) / "hosts" / "capture").exists()


def test_capture_can_be_turned_off(changing: str, env: dict[str, str], repo: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "cortex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[hooks]\ncapture = false\n")
    # The card is rewritten at the next prompt (or start, stop, phase or plan change), not by
    # every write: a note alone leaves capture on.
    Cli(env, repo)("case", "note", changing, "capture is off now")
    failing_pytest(env, repo)
    assert len(records(env, changing)) == 1
    hook("UserPromptSubmit", env, repo, prompt="go on")
    failing_pytest(env, repo)
    assert len(records(env, changing)) == 1


def test_a_secret_in_a_command_reaches_no_file(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    command = f"curl -H 'Authorization: token {SECRET}' https://api.example.invalid/repos"
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": command},
         tool_response={"stdout": "{}", "stderr": "", "interrupted": False})  # fmt: skip
    [call] = records(env, changing)
    assert call.command is not None
    assert SECRET not in call.command
    assert "[REDACTED]" in call.command
    for path in Path(env["CORTEX_STATE_DIR"]).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


PASSWORD = "FAKEpw" + "Q7z" * 6
"""A made-up password: no token shape, known only by where the command puts it."""


@pytest.mark.parametrize(
    "command",
    [
        f"curl -fsS -u 'deploy:a {PASSWORD}|b' https://x.invalid | jq .",
        f'CURL --user deploy:"{PASSWORD}" https://x.invalid',
        f"sshpass -p 'a'\"{PASSWORD}\" ssh deploy@host.invalid",
        f"cd db && mysql -uroot -p'{PASSWORD}' app < seed.sql",
    ],
)
def test_a_password_in_a_tools_own_syntax_reaches_no_file(
    changing: str, env: dict[str, str], repo: Path, command: str
) -> None:
    """Issue 27's attack on step 5 through the hook that records every Bash command."""
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": command},
         tool_response={"stdout": "", "stderr": ""})  # fmt: skip
    [call] = records(env, changing)
    assert call.command is not None
    assert "[REDACTED]" in call.command
    for path in Path(env["CORTEX_STATE_DIR"]).rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_an_edit_outside_the_boundary_is_warned_about_once(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    write = {"tool_name": "Write", "tool_input": {"file_path": str(repo / "docs" / "notes.md"),
             "content": "x"}, "tool_response": {"type": "create"}}  # fmt: skip
    answer = json.loads(hook("PostToolUse", env, repo, **write))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "docs/notes.md is outside the change boundary" in context
    assert "(app.py)" in context
    assert changing in context
    assert hook("PostToolUse", env, repo, **write) == ""  # once per file
    inside = {**write, "tool_input": {"file_path": str(repo / "app.py"), "content": "y"}}
    assert hook("PostToolUse", env, repo, **inside) == ""
    first, second, third = records(env, changing)
    assert first.files == ["docs/notes.md"]
    assert first.outside == ["docs/notes.md"]
    assert third.outside == []
    status = Cli(env, repo)("case", "status", changing).data
    [flag] = [f for f in status["observed"]["flags"] if f["kind"] == "edited_outside_boundary"]
    assert "docs/notes.md" in flag["message"]
    del second


def test_a_subagents_calls_and_its_cortex_commands_are_its_own(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    agent = {"agent_id": "a4304b58f2ec0870d", "agent_type": "Explore"}
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": "ls"},
         tool_response={"stdout": "app.py", "stderr": ""}, **agent)  # fmt: skip
    [call] = records(env, changing)
    assert call.actor == "claude-ac71f000/Explore@a430"
    assert call.session == "claude-ac71f000"
    # PreToolUse names the subagent in the environment of its own cortex commands only.
    evidence = f"cortex case evidence add {changing} --claim 'seen by the explorer'"
    answer = json.loads(hook("PreToolUse", env, repo, tool_name="Bash",
                             tool_input={"command": evidence}, **agent))  # fmt: skip
    rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
    assert rewritten == f"export CORTEX_AGENT=Explore@a430; {evidence}"
    assert hook("PreToolUse", env, repo, tool_name="Bash", tool_input={"command": "ls"},
                **agent) == ""  # fmt: skip
    assert hook("PreToolUse", env, repo, tool_name="Bash", tool_input={"command": evidence}) == ""
    shell = Cli({**env, "CLAUDE_CODE_SESSION_ID": SESSION, "CORTEX_AGENT": "Explore@a430"}, repo)
    recorded = shell("case", "evidence", "add", changing, "--claim", "seen by the explorer").data
    assert recorded["evidence"]["source"]["actor"] == "claude-ac71f000/Explore@a430"


def test_a_claim_of_passing_tests_after_a_failing_run_is_flagged(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    failing_pytest(env, repo)
    cli("case", "evidence", "add", changing, "--claim", "All tests pass now")
    observed = cli("case", "status", changing).data["observed"]
    assert observed["lastRuns"][0]["outcome"] == "failed"
    [flag] = [f for f in observed["flags"] if f["kind"] == "claim_after_failed_run"]
    assert "says the tests pass" in flag["message"]
    assert "1 failed, 2 passed" in flag["message"]
    # A passing run afterwards: the claim is no longer against what was seen.
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": "pytest -q"},
         tool_response={"stdout": "3 passed in 0.10s", "stderr": ""})  # fmt: skip
    observed = cli("case", "status", changing).data["observed"]
    assert [f["kind"] for f in observed["flags"]] == []
    assert observed["lastRuns"][0]["outcome"] == "passed"


@pytest.mark.process
def test_edits_after_the_last_verification_are_flagged(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    shell = Cli({**env, "CLAUDE_CODE_SESSION_ID": SESSION, "CORTEX_APPROVE_COMMANDS": "1"}, repo)
    (repo / "app.py").write_text("print('fixed')\n")
    assert shell("case", "verify", changing).code == 0
    hook("PostToolUse", env, repo, tool_name="Edit",
         tool_input={"file_path": str(repo / "app.py"), "old_string": "a", "new_string": "b"},
         tool_response={})  # fmt: skip
    observed = shell("case", "status", changing).data["observed"]
    [flag] = [f for f in observed["flags"] if f["kind"] == "edited_after_verify"]
    assert "app.py" in flag["message"]


def test_audit_checks_the_chain_and_the_anchors(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    failing_pytest(env, repo)
    failing_pytest(env, repo)
    cli("case", "note", changing, "anchors the two records")  # a commit anchors them
    assert cli("case", "audit", changing).code == 0
    path = case_path(env, changing) / "activity.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # Cut the last anchored record: the commit's anchor finds it gone.
    path.write_bytes(lines[0])
    out = cli("case", "audit", changing)
    assert out.code == 4
    assert "records were cut" in out.stdout
    # Delete the whole ledger: the anchors still name its records.
    path.unlink()
    out = cli("case", "audit", changing)
    assert out.code == 4
    assert "records were cut" in out.stdout
    # Edit a record: the chain breaks.
    edited = lines[0].replace(b"pytest -q tests/", b"pytest -q tests/x")
    path.write_bytes(edited + lines[1])
    out = cli("case", "audit", changing)
    assert out.code == 4
    assert "breaks the chain" in out.stdout or "not the one a commit anchored" in out.stdout


def test_a_full_case_counts_what_it_drops(
    changing: str, env: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(activity, "RECORDS_MAX", 2)
    for _ in range(4):
        failing_pytest(env, repo)
    assert len(records(env, changing)) == 2
    assert activity.dropped(str(case_path(env, changing))) == 2


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[]", b"{" * 5000])
def test_the_cheap_hooks_fail_open(env: dict[str, str], repo: Path, stdin: bytes) -> None:
    for event in ("PostToolUse", "PreToolUse", "PostToolUseFailure"):
        out = io.StringIO()
        assert main(["hook", event], env=env, cwd=str(repo), stdin=io.BytesIO(stdin),
                    stdout=out, stderr=io.StringIO()) == 0  # fmt: skip
        assert out.getvalue() == ""
    log = (Path(env["CORTEX_STATE_DIR"]) / "hooks.log").read_text()
    assert "PostToolUse" in log


def test_every_surface_shows_what_was_observed(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    """timeline, show, handoff and the report carry the activity and the flags."""
    failing_pytest(env, repo)
    cli("case", "evidence", "add", changing, "--claim", "all tests pass")
    timeline = cli("case", "timeline", changing, "--kind", "activity").data
    [entry] = timeline["entries"]
    assert entry["kind"] == "activity"
    assert entry["outcome"] == "failed"
    assert "1 failed, 2 passed" in entry["title"]
    shown = cli("case", "show", changing, human=True).stdout
    assert "last pytest" in shown
    assert "claim after failed run" in shown
    report = cli("case", "report", changing, "--format", "md", human=True).stdout
    assert "Observed by the host" in report
    assert "says the tests pass" in report
    handoff = cli("case", "handoff", changing).data
    assert "claim_after_failed_run" in json.dumps(handoff)


def test_doctor_says_whether_capture_is_on_and_when_it_last_recorded(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    def check() -> str:
        out = cli("doctor")
        data = out.envelope["data"] or out.envelope["error"]
        found = [c for c in (out.envelope["data"] or {}).get("checks", [])
                 if c["name"] == "activity capture"]  # fmt: skip
        assert found, data
        detail: str = found[0]["detail"]
        return detail

    assert check() == "on here; a tool call last recorded on this machine: never"
    failing_pytest(env, repo)
    records(env, changing)  # waits for the writer
    assert "never" not in check()
    (repo / "cortex.toml").write_text(
        (repo / "cortex.toml").read_text() + "[hooks]\ncapture = false\n"
    )
    assert check().startswith("off here ([hooks] capture = false)")


def test_a_subagent_that_edited_waits_for_proof_and_one_that_only_read_does_not(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    """SubagentStop holds up only a subagent whose own edits are not verified yet."""
    editor = {"agent_id": "e0d17000aa", "agent_type": "general-purpose"}
    (repo / "app.py").write_text("print('edited by the subagent')\n")
    reader = {"agent_id": "r3ad0000bb", "agent_type": "Explore"}
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": "ls"},
         tool_response={"stdout": "", "stderr": ""}, **reader)  # fmt: skip
    hook("PostToolUse", env, repo, tool_name="Edit", tool_input={"file_path": str(repo / "app.py"),
         "old_string": "a", "new_string": "b"}, tool_response={}, **editor)  # fmt: skip
    records(env, changing)
    assert hook("SubagentStop", env, repo, stop_hook_active=False, **reader) == ""
    blocked = json.loads(hook("SubagentStop", env, repo, stop_hook_active=False, **editor))
    assert blocked["decision"] == "block"
    assert f"cortex case verify {changing}" in blocked["reason"]
    assert hook("SubagentStop", env, repo, stop_hook_active=True, **editor) == ""


# What an attack on the capture found (each failed before its fix) ------------------------------


def test_a_forged_tombstone_in_activity_is_tampering(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    """Activity is never forgotten: a tombstone there rewrote a record and kept the chain."""
    import hashlib

    failing_pytest(env, repo)
    cli("case", "note", changing, "anchors it")
    path = case_path(env, changing) / "activity.jsonl"
    line = path.read_bytes().rstrip(b"\n")
    forged = line.replace(b'"outcome":"failed"', b'"outcome":"passed"')[:-1]
    forged += b',"forgotten":"' + hashlib.sha256(line).hexdigest().encode() + b'"}\n'
    path.write_bytes(forged)
    out = cli("case", "audit", changing)
    assert out.code == 4
    assert "tombstone" in out.stdout


def test_a_very_long_path_is_cut_and_the_chain_goes_on(
    changing: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    long = str(repo / ("d" * 200) / ("x" * 4000 + ".py"))
    for _ in range(2):
        hook("PostToolUseFailure", env, repo, tool_name="Write",
             tool_input={"file_path": long, "content": "x"}, error="too long")  # fmt: skip
    first, second = records(env, changing)
    assert second.n == 2
    assert all(len(f) <= activity.PATH_MAX for f in first.files + first.outside)
    raw = (case_path(env, changing) / "activity.jsonl").read_bytes()
    assert max(len(line) for line in raw.splitlines()) < activity.RECORD_MAX
    cli("case", "note", changing, "anchors them")
    assert cli("case", "audit", changing).code == 0


def test_a_secret_across_the_cut_is_masked_first(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    command = "echo " + "a " * 1010 + f"--token {SECRET} --verbose"
    hook("PostToolUse", env, repo, tool_name="Bash", tool_input={"command": command},
         tool_response={"stdout": "", "stderr": ""})  # fmt: skip
    [call] = records(env, changing)  # waits for the writer
    assert call.command is not None
    assert call.command.endswith("[cut]")
    raw = (case_path(env, changing) / "activity.jsonl").read_text()
    assert SECRET[:12] not in raw


@pytest.mark.process
@pytest.mark.parametrize("where", ["activity.warned", "activity.lock", "activity.jsonl"])
def test_a_fifo_in_a_files_place_never_hangs_the_hook(
    changing: str, env: dict[str, str], repo: Path, where: str
) -> None:
    """A real hook process against a FIFO where a file belongs: it answers within its deadline."""
    import os
    import subprocess
    import time

    os.mkfifo(case_path(env, changing) / where)
    payload = {"session_id": SESSION, "cwd": str(repo), "tool_name": "Write",
               "tool_input": {"file_path": str(repo / "docs" / "x.md"), "content": "x"},
               "tool_response": {}}  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cortex", "hook", "PostToolUse"], cwd=repo, env=env,
        input=json.dumps(payload).encode(), capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode == 0
    assert time.monotonic() - started < 6
    started = time.monotonic()
    assert Cli(env, repo)("case", "status", changing).code in {0, 4}
    assert time.monotonic() - started < 6


def test_a_call_not_recorded_behind_a_held_lock_is_counted(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    import fcntl
    import os

    lock = os.open(case_path(env, changing) / "activity.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another process holds it, for longer than a hook waits
    try:
        failing_pytest(env, repo)
    finally:
        os.close(lock)
    assert records(env, changing) == []
    assert activity.dropped(str(case_path(env, changing))) == 1
    assert "activity_lock_busy" in (Path(env["CORTEX_STATE_DIR"]) / "hooks.log").read_text()


@pytest.mark.usefixtures("changing")
def test_a_card_edited_to_point_elsewhere_writes_nothing_there(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    cards = list((Path(env["CORTEX_STATE_DIR"]) / "hosts" / "capture").iterdir())
    [card_file] = cards
    card = json.loads(card_file.read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    card["cases"][0]["dir"] = str(elsewhere)
    card_file.write_text(json.dumps(card))
    failing_pytest(env, repo)
    assert list(elsewhere.iterdir()) == []
