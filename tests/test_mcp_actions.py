"""Issue 12, MCP-native answers: every next step a refusal suggests is a served tool that works.

Over MCP an action is `{tool, arguments, reason}`: a tool this server serves, with the caller's
arguments filled in and `<...>` where the caller decides. For each refusal of a scripted set
(every gate an agent meets), each suggested action is called on a case in the same state, its
placeholders filled from the case, and must not be refused by the gate it was suggested for.
Messages name tool arguments, never CLI flags.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import git
from mcp_kit import Session, run_async, serving

pytestmark = pytest.mark.process  # every test here starts Python processes

PLACEHOLDERS = {
    "<what you found>": "the redirect drops return_to",
    "<you>": "agent-1",
    "<statement> :: <how to disprove it>": "login() hard-codes /home :: a test shows it honoured",
    "<what is still unknown>": "nothing",
    "<path>": "app.py",
    "<why these files>": "the redirect lives there",
    "<verifier>": "command:unit",
    "<what changed>": "a new finding",
    "<what was done>": "fixed the redirect",
    "<...>": "fixed the redirect",
    "<why>": "recorded on purpose",
    "<why this is acceptable>": "a flaky upstream test, filed",
    "<question>": "Which migration?",
    "a=<label>|<consequence>": "a=Safe|slower",
    "b=<label>|<consequence>": "b=Fast|riskier",
    "<what blocks it>": "waiting on staging",
    "<criterion id>=<exact statement>": "c1=login keeps return_to",
    "<criterion id>=<verifier>": "c1=command:unit",
}


def filled(value: Any) -> Any:
    """An action's arguments with every `<...>` replaced the way a caller would."""
    if isinstance(value, list):
        return [filled(v) for v in value]
    if isinstance(value, dict):
        return {k: filled(v) for k, v in value.items()}
    if isinstance(value, str) and "<" in value:
        assert value in PLACEHOLDERS, f"an unknown placeholder: {value!r}"
        return PLACEHOLDERS[value]
    return value


Setup = Callable[[Session], Awaitable[tuple[str, dict[str, Any]]]]
"""Bring a new case to a state; return it and the refused call's (tool, arguments)."""


async def opened(s: Session, *criteria: str) -> str:
    envelope, _ = await s.call("cortex_open_task", goal="Fix the redirect", criteria=list(criteria))
    task: str = envelope["data"]["taskId"]
    return task


async def planned(
    s: Session, *criteria: str, risk: str = "medium", verifier: str = "command:unit"
) -> str:
    envelope, _ = await s.call(
        "cortex_open_task", goal="Fix the redirect", criteria=list(criteria), risk=risk
    )
    task: str = envelope["data"]["taskId"]
    ev = (await s.call("cortex_record_evidence", task_id=task, claim="found it"))[0]
    evidence = ev["data"]["evidence"]["id"]
    plan, _ = await s.call(
        "cortex_plan",
        task_id=task,
        hypotheses=[
            {"statement": "login() is wrong", "disproof": "a test", "supports": [evidence]}
        ],
        files=["app.py"],
        boundary_reason="it lives there",
        verify=[verifier],
        uncertainty="none",
    )
    assert plan["ok"], plan
    return task


async def changing(
    s: Session, *criteria: str, risk: str = "medium", verifier: str = "command:unit"
) -> str:
    task = await planned(s, *criteria, risk=risk, verifier=verifier)
    began, _ = await s.call("cortex_begin_change", task_id=task, actor="agent-1")
    assert began["ok"], began
    return task


def scenarios(repo: Path, env: dict[str, str]) -> dict[str, Setup]:
    def edit(name: str = "app.py") -> None:
        (repo / name).write_text(f"print({name!r} + ' changed')\n")

    def reset() -> None:
        git(repo, "checkout", "--", ".", env=env)
        git(repo, "clean", "-fdq", env=env)

    async def too_early(s: Session) -> tuple[str, dict[str, Any]]:
        task = await opened(s)
        return task, {"tool": "cortex_begin_change", "arguments": {"task_id": task}}

    async def incomplete_plan(s: Session) -> tuple[str, dict[str, Any]]:
        task = await opened(s)
        await s.call("cortex_record_evidence", task_id=task, claim="found it")
        arguments = {"task_id": task, "hypotheses": ["a :: b"]}
        return task, {"tool": "cortex_plan", "arguments": arguments}

    async def nothing_changed(s: Session) -> tuple[str, dict[str, Any]]:
        reset()
        task = await changing(s)
        return task, {"tool": "cortex_verify", "arguments": {"task_id": task}}

    async def drifted(s: Session) -> tuple[str, dict[str, Any]]:
        reset()
        task = await changing(s, risk="high")
        edit()
        edit("other.py")
        return task, {"tool": "cortex_verify", "arguments": {"task_id": task}}

    async def unproven(s: Session) -> tuple[str, dict[str, Any]]:
        reset()
        task = await changing(s, "c1=login keeps return_to")
        edit()
        verified, _ = await s.call("cortex_verify", task_id=task)
        assert verified["ok"], verified
        arguments = {"task_id": task, "outcome": "fixed it"}
        return task, {"tool": "cortex_complete", "arguments": arguments}

    async def failed(s: Session) -> tuple[str, dict[str, Any]]:
        reset()
        task = await changing(s, verifier="command:bad")
        edit()
        verified, _ = await s.call("cortex_verify", task_id=task)
        assert verified["data"]["assessment"]["status"] == "failed", verified
        arguments = {"task_id": task, "outcome": "fixed it"}
        return task, {"tool": "cortex_complete", "arguments": arguments}

    async def without_lease(s: Session) -> tuple[str, dict[str, Any]]:
        reset()
        task = await planned(s)
        edit()
        return task, {"tool": "cortex_verify", "arguments": {"task_id": task, "actor": "agent-1"}}

    async def waiting(s: Session) -> tuple[str, dict[str, Any]]:
        task = await planned(s)
        asked, _ = await s.call(
            "cortex_request_decision",
            task_id=task,
            question="Which?",
            options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B", "consequence": "x"}],
        )
        assert asked["ok"], asked
        return task, {"tool": "cortex_begin_change", "arguments": {"task_id": task}}

    return {
        "too early": too_early,
        "incomplete plan": incomplete_plan,
        "nothing changed": nothing_changed,
        "drifted": drifted,
        "unproven criterion": unproven,
        "failed verification": failed,
        "without the lease": without_lease,
        "waiting on a person": waiting,
    }


def test_every_suggested_action_is_a_served_tool_the_gate_accepts(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    from conftest import configure_verifiers

    configure_verifiers(repo, served, {"unit": ["true"], "bad": ["false"]})
    cases = scenarios(repo, served)
    checked: list[tuple[str, str]] = []

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            for label, setup in cases.items():
                _, refused_call = await setup(s)
                refused, _ = await s.call(refused_call["tool"], **refused_call["arguments"])
                assert refused["ok"] is False, (label, refused)
                message = refused["error"]["message"]
                assert not re.search(r"(?<![\w-])--[a-z]", message), (label, message)
                assert refused["actions"], (label, refused)
                for index, action in enumerate(refused["actions"]):
                    assert set(action) == {"tool", "arguments", "reason"}, action
                    assert action["tool"] in s.tools, (label, action)
                    # Same state again, then the suggestion instead of the refused call.
                    _, again = await setup(s)
                    first, _ = await s.call(again["tool"], **again["arguments"])
                    assert (
                        first["error"] == refused["error"]
                        or first["error"]["code"] == (refused["error"]["code"])
                    ), label
                    arguments = filled(first["actions"][index]["arguments"])
                    answer, _ = await s.call(action["tool"], **arguments)
                    same_gate = answer["error"] is not None and (
                        answer["error"]["message"] == refused["error"]["message"]
                    )
                    assert not same_gate, (label, action, answer["error"])
                    checked.append((label, action["tool"]))

    run_async(body)
    assert {label for label, _ in checked} == set(cases)
    tools = {tool for _, tool in checked}
    assert {"cortex_verify", "cortex_begin_change", "cortex_complete", "cortex_block"} <= tools


def test_an_action_carries_the_arguments_the_caller_gave(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    """Refused for drift: the suggestion is the same call with ack_drift, claims kept."""
    from conftest import configure_verifiers

    configure_verifiers(repo, served, {"unit": ["true"]})

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            task = await changing(s, risk="high")
            (repo / "app.py").write_text("print(1)\n")
            (repo / "other.py").write_text("print(2)\n")
            claim = {"id": "k1", "statement": "it works", "contract": "command:unit"}
            refused, _ = await s.call("cortex_verify", task_id=task, claims=[claim])
            assert refused["ok"] is False
            assert "ack_drift" in refused["error"]["message"]
            (action,) = refused["actions"]
            assert action == {
                "tool": "cortex_verify",
                "arguments": {"task_id": task, "ack_drift": True, "claims": [claim]},
                "reason": "accept the drift on record",
            }
            done, _ = await s.call("cortex_verify", **action["arguments"])
            assert done["ok"], done

    run_async(body)


def test_workspace_runs_a_call_elsewhere_and_is_checked_like_dash_c(
    served: dict[str, str], repo: Path, tmp_path: Path, errlog: IO[str]
) -> None:
    from conftest import make_repo

    other = make_repo(tmp_path / "other", served)

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            here, _ = await s.call("cortex_open_task", goal="here")
            there, _ = await s.call("cortex_open_task", goal="there", workspace=str(other))
            assert here["data"]["workspace"]["root"] == str(repo)
            assert there["data"]["workspace"]["root"] == str(other)
            relative, _ = await s.call("cortex_list_tasks", workspace="../other")
            assert [i["taskId"] for i in relative["data"]["items"]] == [there["data"]["taskId"]]
            # A write to a case from the wrong workspace names the argument to use.
            task = there["data"]["taskId"]
            refused, result = await s.call("cortex_note", task_id=task, text="x")
            assert "(workspace " in refused["error"]["message"]
            note, _ = await s.call("cortex_note", task_id=task, text="x", workspace=str(other))
            assert note["ok"], note
            for bad in (str(tmp_path / "missing"), str(other / "app.py")):
                gone, result = await s.call("cortex_status", task_id=task, workspace=bad)
                assert gone["error"]["code"] == "invalid_input"
                assert (result.meta or {}).get("cortex/exitStatus") == 4

    run_async(body)
