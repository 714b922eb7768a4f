"""`cortex hook EVENT`: the brief, the stop gate, compaction and failing open (hosts.md).

These drive the hook face with the payloads the hosts send (tests/test_host_claude.py drives
the real Claude Code CLI). Most run in process through `cortex.main.main`; the ones about the
process itself (exit status, stdout, a deadline) start `python -m cortex hook` for real.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, configure_verifiers, git, state_root

from cortex.hooks import entry
from cortex.hooks.text import BRIEF_BUDGET
from cortex.main import main

__all__ = ["state_root"]

SESSION = "5e55a1d0-0000-4000-8000-000000000001"
OTHER = "0the2000-0000-4000-8000-000000000002"


def hook(
    event: str,
    env: dict[str, str],
    repo: Path,
    *,
    host: str = "claude",
    session: str = SESSION,
    **fields: Any,
) -> tuple[int, str, str]:
    """Run one hook in process, as the host would: payload on stdin, answer on stdout."""
    payload = {"session_id": session, "cwd": str(repo), "hook_event_name": event, **fields}
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["hook", event, "--host", host],
        env=env,
        cwd=str(repo),
        stdin=io.BytesIO(json.dumps(payload).encode()),
        stdout=out,
        stderr=err,
    )
    return code, out.getvalue(), err.getvalue()


def context_of(out: str) -> str:
    answer = json.loads(out)
    text: str = answer["hookSpecificOutput"]["additionalContext"]
    return text


def session_env(env: dict[str, str], session: str = SESSION) -> dict[str, str]:
    """What a Bash command of the host session sees."""
    return {**env, "CLAUDE_CODE_SESSION_ID": session, "CORTEX_APPROVE_COMMANDS": "1"}


@pytest.fixture
def changing(cli: Cli, env: dict[str, str], repo: Path) -> str:
    """A change case whose lease this test's host session took (through a Bash command)."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('1 passed')"]})
    task = cli.open("Fix the login redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    out = cli(
        "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--verify", "command:unit", "--file", "app.py", "--boundary-reason", "it is here",
    )  # fmt: skip
    assert out.code == 0, out.stdout
    shell = Cli(session_env(env), repo)
    out = shell("case", "begin-change", task)
    assert out.code == 0, out.stdout
    return task


def verify_in_session(env: dict[str, str], repo: Path, task: str) -> None:
    out = Cli(session_env(env), repo)("case", "verify", task)
    assert out.code == 0, out.stdout
    assert out.data["assessment"]["status"] == "verified", out.data


# The brief ----------------------------------------------------------------------------------


def test_no_open_case_means_no_output_at_all(cli: Cli, env: dict[str, str], repo: Path) -> None:
    """Nothing to brief: the host gets no bytes (Claude Code) or `{}` (Codex)."""
    assert hook("SessionStart", env, repo, source="startup") == (0, "", "")
    assert hook("SessionStart", env, repo, host="codex", source="startup")[1] == "{}\n"
    task = cli.open()
    assert cli("case", "abort", task, "--reason", "not needed").code == 0
    assert hook("SessionStart", env, repo, source="startup") == (0, "", "")


def test_the_brief_names_case_phase_lease_proof_and_next_step(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    code, out, _ = hook("SessionStart", env, repo, source="startup")
    assert code == 0
    text = context_of(out)
    assert changing in text
    assert "Fix the login redirect" in text
    assert "phase: changing" in text
    assert "claude-5e55a1d0 (this session)" in text
    assert "proof: none yet" in text
    assert f"next: cortex case verify {changing}" in text
    assert "app.py is wrong" in text  # the open hypothesis of the case the session is on


@pytest.mark.process
def test_the_brief_follows_the_proof_from_none_to_current_to_stale(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    (repo / "app.py").write_text("print('fixed')\n")
    verify_in_session(env, repo, changing)
    text = context_of(hook("SessionStart", env, repo, source="resume")[1])
    assert "proof: current (vb_" in text
    assert text.startswith("Resumed")
    (repo / "app.py").write_text("print('fixed again')\n")
    text = context_of(hook("SessionStart", env, repo, source="startup")[1])
    assert "proof: stale: the code changed since vb_" in text
    assert "changed: app.py" in text


@pytest.mark.usefixtures("changing")
def test_another_sessions_lease_is_shown_as_theirs(env: dict[str, str], repo: Path) -> None:
    text = context_of(hook("SessionStart", env, repo, session=OTHER, source="startup")[1])
    assert "lease: claude-5e55a1d0 until" in text
    assert "(this session)" not in text


def test_many_open_cases_stay_within_the_budget(cli: Cli, env: dict[str, str], repo: Path) -> None:
    """Eighty open cases with long goals: one brief of at most BRIEF_BUDGET characters."""
    tasks = [cli.open(f"Case {n:02d}: " + "an investigation with a long goal " * 8)
             for n in range(80)]  # fmt: skip
    text = context_of(hook("SessionStart", env, repo, source="startup")[1])
    assert len(text) <= BRIEF_BUDGET
    assert tasks[-1] in text.split("\n\n", 1)[1].splitlines()[0]  # the newest leads
    assert "more: cortex case list" in text
    assert "Other open cases:" in text


def test_a_pending_decision_is_in_the_brief(cli: Cli, env: dict[str, str], repo: Path) -> None:
    task = cli.open()
    out = cli(
        "case", "decision", "request", task, "--question", "Keep the old URL format?",
        "--option", "a=keep|old links work", "--option", "b=drop|simpler",
    )  # fmt: skip
    assert out.code == 0, out.stdout
    text = context_of(hook("SessionStart", env, repo, source="startup")[1])
    assert "waiting for a person" in text
    assert "Keep the old URL format?" in text


# The stop gate ------------------------------------------------------------------------------


def block_reason(out: str) -> str:
    answer = json.loads(out)
    assert answer["decision"] == "block"
    reason: str = answer["reason"]
    return reason


def test_a_change_without_proof_blocks_the_stop_with_the_command(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    (repo / "app.py").write_text("print('fixed')\n")
    code, out, _ = hook("Stop", env, repo, stop_hook_active=False)
    assert code == 0
    reason = block_reason(out)
    assert changing in reason
    assert f"cortex case verify {changing}" in reason
    assert "no verification yet" in reason


@pytest.mark.process
def test_stale_proof_blocks_and_names_what_changed(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    (repo / "app.py").write_text("print('fixed')\n")
    verify_in_session(env, repo, changing)
    assert hook("Stop", env, repo, stop_hook_active=False)[1] == ""  # current: through
    (repo / "app.py").write_text("print('fixed, then edited')\n")
    reason = block_reason(hook("Stop", env, repo, stop_hook_active=False)[1])
    assert "stale" in reason
    assert "app.py" in reason


@pytest.mark.process
def test_a_secret_shaped_file_name_is_masked_in_the_brief_and_the_stop_reason(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    """Changed files come from the work tree, not from redacted records: they are masked too."""
    (repo / "app.py").write_text("print('fixed')\n")
    verify_in_session(env, repo, changing)
    token = "ghp_" + "FAKE0" * 7 + "0"
    (repo / f"{token}.txt").write_text("x\n")
    text = context_of(hook("SessionStart", env, repo, source="startup")[1])
    assert "proof: stale" in text
    assert token not in text
    assert "[REDACTED]" in text
    reason = block_reason(hook("Stop", env, repo, stop_hook_active=False)[1])
    assert token not in reason
    assert "[REDACTED]" in reason


def test_stops_that_pass(changing: str, env: dict[str, str], repo: Path) -> None:
    """The loop guard, another session's lease, the switch, a blocked case: all let through."""
    (repo / "app.py").write_text("print('changed')\n")  # a change with no proof yet
    assert hook("Stop", env, repo, stop_hook_active=True)[1] == ""
    assert hook("Stop", env, repo, session=OTHER, stop_hook_active=False)[1] == ""
    assert hook("Stop", env, repo, host="codex", stop_hook_active=True)[1] == "{}\n"
    (repo / "cortex.toml").write_text(
        (repo / "cortex.toml").read_text() + "\n[hooks]\nstop_gate = false\n"
    )
    assert hook("Stop", env, repo, stop_hook_active=False)[1] == ""
    git(repo, "checkout", "cortex.toml", env=env)
    assert hook("Stop", env, repo, stop_hook_active=False)[1] != ""
    shell = Cli(session_env(env), repo)  # only the holder may block (issue 27): the session
    assert shell("case", "block", changing, "--reason", "waiting on the API team").code == 0
    assert hook("Stop", env, repo, stop_hook_active=False)[1] == ""


def test_a_case_before_changing_never_blocks(cli: Cli, env: dict[str, str], repo: Path) -> None:
    cli.open()
    assert hook("Stop", env, repo, stop_hook_active=False) == (0, "", "")


def test_a_change_not_begun_and_another_sessions_ended_lease_never_block(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    """Nothing changed yet: nothing to prove. A lease another session took, even ended, is
    theirs: this session is not sent to prove (or told to take over) their change."""
    assert hook("Stop", env, repo, stop_hook_active=False) == (0, "", "")
    (repo / "app.py").write_text("print('changed')\n")
    assert hook("Stop", env, repo, stop_hook_active=False)[1] != ""
    shell = Cli(session_env(env), repo)
    assert shell("case", "lease", "release", changing).code == 0
    assert hook("Stop", env, repo, stop_hook_active=False)[1] != ""  # its own ended lease
    assert hook("Stop", env, repo, session=OTHER, stop_hook_active=False) == (0, "", "")


@pytest.mark.usefixtures("changing")
def test_a_subagent_that_edited_nothing_stops_freely(env: dict[str, str], repo: Path) -> None:
    (repo / "app.py").write_text("print('fixed')\n")
    out = hook("SubagentStop", env, repo, stop_hook_active=False, agent_id="a1",
               agent_type="Explore")  # fmt: skip
    assert out == (0, "", "")


# Compaction and the lease -------------------------------------------------------------------


def test_after_compaction_the_brief_leads_with_the_sessions_case(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    """PreCompact keeps the case the session was on; the compact brief starts with it."""
    older = cli.open("The older investigation")
    cli.open("A newer, unrelated case")
    # The session was on the older case when it was compacted (as PreCompact would keep it).
    from cortex.kernel.activity.session_lease import focus, remember_focus
    from cortex.kernel.kernel import Kernel

    kernel = Kernel(str(repo), session_env(env), default_actor="t")
    remember_focus(kernel, older)
    assert focus(kernel) == older
    text = context_of(hook("SessionStart", env, repo, source="compact")[1])
    assert text.startswith("The conversation was compacted")
    assert text.split("\n\n", 1)[1].startswith(older)
    # PreCompact itself records the case the session holds the lease of, or the newest.
    assert hook("PreCompact", env, repo, trigger="auto") == (0, "", "")
    assert focus(kernel) != older


def test_prompts_and_stops_keep_the_sessions_lease_alive(
    changing: str, env: dict[str, str], repo: Path
) -> None:
    """Past half its time, the session's lease is renewed by the next prompt."""
    shell = Cli(session_env(env), repo)
    out = shell("case", "begin-change", changing, "--ttl", "4s")
    assert out.code == 0, out.stdout
    before = out.data["lease"]["expiresAt"]
    assert hook("UserPromptSubmit", env, repo, prompt="go on") == (0, "", "")
    assert shell("case", "status", changing).data["lease"]["expiresAt"] == before  # not due
    time.sleep(2.2)
    assert hook("UserPromptSubmit", env, repo, prompt="go on") == (0, "", "")
    after = shell("case", "status", changing).data["lease"]["expiresAt"]
    assert after > before
    hook("UserPromptSubmit", env, repo, session=OTHER, prompt="x")
    assert shell("case", "status", changing).data["lease"]["expiresAt"] == after


# Failing open -------------------------------------------------------------------------------


def failures(env: dict[str, str]) -> list[dict[str, Any]]:
    from cortex.kernel.host import hook_log

    return [dict(r) for r in hook_log.read(env["CORTEX_STATE_DIR"])]


@pytest.mark.parametrize(
    ("argv", "stdin", "kind"),
    [
        (["SessionStart"], b"not json", "payload_not_json"),
        (["Stop"], b"[1, 2]", "payload_not_object"),
        (["Stop"], b"{" * 100_000, "payload_not_json"),
        (["Stop"], b" " * (entry.PAYLOAD_MAX + 1), "payload_too_large"),
        (["Stop"], b"\xff\xfe", "payload_not_json"),
        (["NoSuchEvent"], b"{}", "unknown_event"),
        ([], b"{}", "missing_event"),
        (["Stop", "--host", "cursor"], b"{}", "unknown_host"),
        (["Stop", "--bogus"], b"{}", "unknown_argument"),
    ],
)
def test_bad_input_is_silence_and_a_line_for_doctor(
    env: dict[str, str], repo: Path, argv: list[str], stdin: bytes, kind: str
) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["hook", *argv], env=env, cwd=str(repo), stdin=io.BytesIO(stdin), stdout=out,
                stderr=err)  # fmt: skip
    assert (code, out.getvalue()) == (0, "")
    assert kind in err.getvalue()
    assert failures(env)[-1]["error"] == kind


@pytest.mark.usefixtures("changing")
def test_a_broken_configuration_fails_open(env: dict[str, str], repo: Path) -> None:
    (repo / "cortex.toml").write_text("no_such_key = 1\n")
    (repo / "app.py").write_text("print('fixed')\n")
    for event in ("SessionStart", "Stop", "PreCompact", "UserPromptSubmit"):
        code, out, _ = hook(event, env, repo, source="startup", stop_hook_active=False)
        assert (code, out) == (0, "")
    assert {f["error"] for f in failures(env)} == {"config_error"}


def test_a_failure_never_carries_the_payload(env: dict[str, str], repo: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out = io.StringIO()
    main(["hook", "Stop"], env=env, cwd=str(repo), stdin=io.BytesIO(b'{"x": "' +
         secret.encode() + b'"'), stdout=out, stderr=io.StringIO())  # fmt: skip
    log = Path(env["CORTEX_STATE_DIR"], "hooks.log").read_text()
    assert secret not in log
    assert "payload_not_json" in log


def test_an_exception_and_a_deadline_both_end_in_silence(env: dict[str, str]) -> None:
    """Faults injected into the handler: a bug, and a hook that runs past its deadline."""

    def bug(_call: entry.Call) -> dict[str, Any] | None:
        raise ZeroDivisionError

    def slow(_call: entry.Call) -> dict[str, Any] | None:
        time.sleep(5)
        return {"decision": "block", "reason": "too late"}

    out = io.StringIO()
    code = entry.run(["Stop"], env, io.BytesIO(b"{}"), out, io.StringIO(), handlers={"Stop": bug})
    assert (code, out.getvalue()) == (0, "")
    assert failures(env)[-1]["error"] == "ZeroDivisionError"
    entry.DEADLINE["Stop"] = 1
    try:
        started = time.monotonic()
        code = entry.run(["Stop"], env, io.BytesIO(b"{}"), out, io.StringIO(),
                         handlers={"Stop": slow})  # fmt: skip
    finally:
        del entry.DEADLINE["Stop"]
    assert time.monotonic() - started < 3
    assert (code, out.getvalue()) == (0, "")
    assert failures(env)[-1]["error"] == "deadline"


@pytest.mark.process
def test_a_real_hook_process_exits_zero_on_anything(env: dict[str, str], repo: Path) -> None:
    """The console path: `python -m cortex hook` with a closed stdin, garbage and a good stop."""
    for stdin in (b"", b"\x00" * 10, json.dumps({"cwd": str(repo)}).encode()):
        proc = subprocess.run(
            [sys.executable, "-m", "cortex", "hook", "Stop"],
            cwd=repo, env=env, input=stdin, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr


def test_the_log_stays_bounded(env: dict[str, str]) -> None:
    from cortex.kernel.host import hook_log

    for n in range(6000):
        hook_log.append(env, {"event": "Stop", "error": "x" * 40, "n": n})
    log = Path(env["CORTEX_STATE_DIR"], "hooks.log")
    assert log.stat().st_size <= hook_log.LOG_MAX + 200
    records = hook_log.read(env["CORTEX_STATE_DIR"])
    assert records[-1]["n"] == 5999
    assert all(isinstance(r["n"], int) for r in records)  # whole lines only
