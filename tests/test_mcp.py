"""`cortex serve` end to end: the real server process, driven by the MCP SDK's own stdio client.

Every result is checked against the tool's advertised outputSchema with jsonschema (the client
also validates successful results itself), and the server's stderr is captured to show that
protocol never leaks there and that nothing but protocol reaches stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import Cli, case_path, tree_state
from mcp_kit import envelope_in, raw_server, run_async, serving, text_envelope

pytestmark = pytest.mark.process  # every test here talks to a real `cortex serve`

EXPECTED_TOOLS = {
    "cortex_open_task": (False, False, False),
    "cortex_status": (True, False, True),
    "cortex_record_evidence": (False, False, False),
    "cortex_note": (False, False, False),
    "cortex_plan": (False, False, False),
    "cortex_resolve": (False, False, False),
    "cortex_begin_change": (False, False, False),
    "cortex_verify": (False, False, False),
    "cortex_request_decision": (False, False, True),
    "cortex_complete": (False, False, False),
    "cortex_abort_task": (False, True, False),
    "cortex_block": (False, True, False),
    "cortex_read_evidence": (True, False, True),
    "cortex_read_artifact": (True, False, True),
    "cortex_timeline": (True, False, True),
    "cortex_handoff": (True, False, True),
    "cortex_list_tasks": (True, False, True),
    "cortex_unblock": (False, False, False),
    "cortex_recall": (True, False, True),
    "cortex_recall_get": (True, False, True),
    "cortex_review": (True, False, True),
    "cortex_archive": (False, False, True),
    "cortex_unarchive": (False, False, True),
}
"""Tool name -> (readOnlyHint, destructiveHint, idempotentHint)."""


def test_an_agent_runs_a_whole_case_over_stdio(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    import jsonschema

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            # Names, schemas and hints.
            assert set(s.tools) == set(EXPECTED_TOOLS)
            for name, (read_only, destructive, idempotent) in EXPECTED_TOOLS.items():
                tool = s.tools[name]
                hints = tool.annotations
                assert hints is not None
                assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                    read_only,
                    destructive,
                    idempotent,
                ), name
                assert hints.open_world_hint is False
                assert tool.input_schema["type"] == "object"
                assert tool.input_schema["additionalProperties"] is False
                # No output schema: it would oblige a second copy of every envelope as
                # structuredContent (docs/design/mcp.md); the answers' schemas are checked below.
                assert tool.output_schema is None
                jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            assert "decision" not in " ".join(n for n in s.tools if "answer" in n)
            assert not any("answer" in name or "trust" in name for name in s.tools)

            opened, _ = await s.call("cortex_open_task", goal="Fix the login redirect")
            assert opened["ok"], opened
            assert opened["command"] == "case.open"
            task = opened["data"]["taskId"]

            ev, _ = await s.call(
                "cortex_record_evidence",
                task_id=task,
                claim="login() returns the wrong page",
                file="app.py",
                raw="traceback: login -> /home\n",
            )
            assert ev["ok"], ev
            evidence = ev["data"]["evidence"]
            raw_ref = evidence["rawRef"]

            planned, _ = await s.call(
                "cortex_plan",
                task_id=task,
                hypotheses=["login() hard-codes /home :: a test shows the redirect honoured"],
                supports=[f"1={evidence['id']}"],
                files=["app.py"],
                boundary_reason="the redirect lives in app.py",
                verify=["command:unit"],
                uncertainty="none",
            )
            assert planned["ok"], planned

            began, _ = await s.call("cortex_begin_change", task_id=task)
            assert began["ok"], began
            assert began["data"]["lease"]["actor"] == "agent-1"

            (repo / "app.py").write_text("def login(to='/home'):\n    return to\n")
            verified, _ = await s.call("cortex_verify", task_id=task)
            assert verified["ok"], verified
            receipts = verified["data"]["receipts"]
            unit = [r for r in receipts if r["requirement"] == "command:unit"]
            assert [r["status"] for r in unit] == ["passed"]
            assert verified["data"]["assessment"]["status"] == "verified"

            # The verifier's output is a raw artifact the case cites; read it back.
            artifact = unit[0]["artifact"]
            preview, _ = await s.call("cortex_read_artifact", task_id=task, ref=artifact)
            assert preview["ok"], preview
            assert "unit: 3 passed" in preview["data"]["content"]
            cited, _ = await s.call("cortex_read_artifact", task_id=task, ref=raw_ref)
            assert "traceback: login" in cited["data"]["content"]

            status, result = await s.call("cortex_status", task_id=task)
            assert status["data"]["status"] == "verifying"
            assert (result.meta or {}).get("cortex/exitStatus") == 0

            listed, _ = await s.call("cortex_list_tasks")
            assert [item["taskId"] for item in listed["data"]["items"]] == [task]

            # The rest of the tools, each answer checked against its own outputSchema.
            noted, _ = await s.call("cortex_note", task_id=task, text="the fix is one line")
            assert noted["ok"], noted
            hypothesis = planned["data"]["hypotheses"][0]["id"]
            resolved, _ = await s.call(
                "cortex_resolve",
                task_id=task,
                hypothesis_id=hypothesis,
                status="confirmed",
                reason="the test passes",
                evidence=[evidence["id"]],
            )
            assert resolved["ok"], resolved
            read, _ = await s.call("cortex_read_evidence", task_id=task, evidence_id=evidence["id"])
            assert read["data"]["evidence"]["claim"] == "login() returns the wrong page"
            timeline, _ = await s.call("cortex_timeline", task_id=task, limit=5)
            assert timeline["data"]["returned"] == 5
            packet, _ = await s.call("cortex_handoff", task_id=task, compact=True)
            assert packet["ok"], packet

            done, _ = await s.call("cortex_complete", task_id=task, outcome="login honours `to`")
            assert done["ok"], done
            assert done["data"]["status"] == "complete"

            other = (await s.call("cortex_open_task", goal="ask first"))[0]["data"]["taskId"]
            await s.call("cortex_record_evidence", task_id=other, claim="two ways to go")
            asked, _ = await s.call(
                "cortex_request_decision",
                task_id=other,
                question="Which way?",
                options=[{"id": "a", "label": "A", "consequence": "slow"}, "b=B|fast"],
            )
            assert asked["ok"], asked
            assert [o["id"] for o in asked["data"]["decision"]["options"]] == ["a", "b"]
            stopped, _ = await s.call("cortex_block", task_id=other, reason="waiting on ops")
            assert stopped["data"]["status"] == "blocked"
            third = (await s.call("cortex_open_task", goal="not needed"))[0]["data"]["taskId"]
            dropped, _ = await s.call("cortex_abort_task", task_id=third, reason="duplicate")
            assert dropped["data"]["status"] == "abandoned"

    run_async(body)
    errlog.seek(0)
    stderr = errlog.read()
    # Nothing of the protocol on stderr, and a clean shutdown said nothing at all.
    assert "jsonrpc" not in stderr
    assert stderr == ""


def test_refusals_keep_the_envelope_and_its_actions(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    import mcp_types as types

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            task = (await s.call("cortex_open_task", goal="g"))[0]["data"]["taskId"]
            # A rule rejection: verify before any plan exists.
            refused, result = await s.call("cortex_begin_change", task_id=task)
            assert refused["ok"] is False
            assert result.is_error is True
            assert refused["error"]["code"] == "refused"
            assert refused["actions"], "a refusal names the next step"
            assert (result.meta or {}).get("cortex/exitStatus") == 5

            # Bad input: unknown field, wrong type, missing field, unknown tool -> exit 4.
            for name, arguments in [
                ("cortex_status", {"task_id": task, "bogus": 1}),
                ("cortex_status", {"task_id": 7}),
                ("cortex_note", {"task_id": task}),
                ("cortex_answer_decision", {"task_id": task}),
                ("cortex_status", {"task_id": "../../etc/passwd"}),
            ]:
                raw = await s.client.call_tool(name, arguments)
                assert isinstance(raw, types.CallToolResult)
                assert raw.is_error is True, (name, arguments)
                envelope = envelope_in(raw)
                assert envelope["ok"] is False
                assert envelope["error"]["code"] == "invalid_input", envelope
                assert (raw.meta or {}).get("cortex/exitStatus") == 4

    before = tree_state(Path(served["CORTEX_STATE_DIR"]))
    run_async(body)
    after = tree_state(Path(served["CORTEX_STATE_DIR"]))
    # Only the opened case was written; the refused calls added nothing to it.
    new = sorted(set(after) - set(before))
    assert new, "the open wrote a case"
    errlog.seek(0)
    assert "Traceback" not in errlog.read()


def test_the_same_operation_answers_the_same_through_cli_and_mcp(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    cli = Cli(served, repo)
    cli_task = cli.open("Same answer", "--risk", "high")
    cli_answers = {
        "note": cli("case", "note", cli_task, "a note").envelope,
        "status": cli("case", "status", cli_task).envelope,
        "refusal": cli("case", "begin-change", cli_task).envelope,
        "missing": cli("case", "status", "task_01J00000000000000000000000").envelope,
    }
    mcp_answers: dict[str, dict[str, Any]] = {}

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            opened = (await s.call("cortex_open_task", goal="Same answer", risk="high"))[0]
            task = opened["data"]["taskId"]
            mcp_answers["note"] = (await s.call("cortex_note", task_id=task, text="a note"))[0]
            mcp_answers["status"] = (await s.call("cortex_status", task_id=task))[0]
            mcp_answers["refusal"] = (await s.call("cortex_begin_change", task_id=task))[0]
            missing = "task_01J00000000000000000000000"
            mcp_answers["missing"] = (await s.call("cortex_status", task_id=missing))[0]
            mcp_answers["ids"] = {"task": task}

    run_async(body)
    mcp_task = mcp_answers.pop("ids")["task"]
    for key, cli_envelope in cli_answers.items():
        left, right = normalise(mcp_answers[key], mcp_task), normalise(cli_envelope, cli_task)
        # The same steps, each face's way: the CLI's command lines, MCP's tool calls.
        cli_actions, mcp_actions = right.pop("actions", []), left.pop("actions", [])
        assert json.dumps(left, indent=1, sort_keys=True) == json.dumps(
            right, indent=1, sort_keys=True
        )
        assert all(set(a) == {"command", "reason"} for a in cli_actions)
        assert all(set(a) == {"tool", "arguments", "reason"} for a in mcp_actions)
        assert [a["reason"] for a in mcp_actions] == [a["reason"] for a in cli_actions]


def normalise(value: Any, task: str) -> Any:
    """Replace the ids, times and channels that legitimately differ between two runs."""
    import re

    text = json.dumps(value, sort_keys=True).replace(task, "TASK")
    text = re.sub(r"\b(ev|hyp|dec|rcpt|batch|raw|cmd)_[0-9A-Z]{26}\b", r"\1_ID", text)
    # Ledger hash chains start from the task id, so their links differ too.
    text = re.sub(r"\b[0-9a-f]{64}\b", "HASH", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME", text)
    # Each record says which face it arrived through (docs/design/trust.md).
    text = re.sub(r'"via": "(cli|cli-tty|mcp)"', '"via": "VIA"', text)
    return json.loads(text)


def test_stdout_carries_only_protocol(served: dict[str, str], repo: Path) -> None:
    """A raw JSON-RPC exchange: every stdout line is a JSON-RPC message, stderr has none."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        # An internal error with CORTEX_DEBUG set prints a traceback: it must go to stderr.
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "cortex_open_task", "arguments": {"goal": "x", "mode": "nope"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "cortex_open_task", "arguments": {"goal": "print me"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=repo,
        env={**served, "CORTEX_DEBUG": "1"},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    for message in messages:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    replies: list[dict[str, Any]] = []
    # Keep stdin open until every request is answered: closing it ends the session.
    while len([r for r in replies if "id" in r]) < 4:
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        replies.append(json.loads(line))
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush the closed pipe
    rest, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()
    replies += [json.loads(line) for line in rest.decode().splitlines()]
    assert all(reply.get("jsonrpc") == "2.0" for reply in replies)
    by_id = {reply["id"]: reply for reply in replies if "id" in reply}
    assert set(by_id) == {1, 2, 3, 4}
    assert by_id[3]["result"]["isError"] is True
    assert text_envelope(by_id[4]["result"])["ok"] is True
    assert "jsonrpc" not in stderr.decode()


def test_mcp_is_imported_only_by_serve(cli: Cli, task: str) -> None:
    """No other command pays for the SDK: `case status` and `doctor` leave it unloaded."""
    probe = (
        "import io, sys\n"
        "from cortex.main import main\n"
        f"main(['case', 'status', {task!r}, '--json'], stdout=io.StringIO())\n"
        "main(['config', '--json'], stdout=io.StringIO())\n"
        "sys.stdout.write(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    loaded = set(proc.stdout.decode().split())
    assert "cortex.main" in loaded
    assert not {name for name in loaded if name == "mcp" or name.startswith(("mcp.", "cortex.mcp"))}


def test_a_case_written_over_mcp_passes_audit(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    ids: list[str] = []

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            task = (await s.call("cortex_open_task", goal="audited"))[0]["data"]["taskId"]
            for n in range(5):
                await s.call("cortex_note", task_id=task, text=f"note {n}")
            ids.append(task)

    run_async(body)
    audit = Cli(served, repo)("case", "audit", ids[0])
    assert audit.code == 0, audit.stdout
    assert case_path(served, ids[0]).is_dir()


def test_an_agent_unblocks_a_case_over_mcp(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    """A person blocks (a shell command); the agent resumes with cortex_unblock and a reason."""
    cli = Cli(served, repo)
    task = cli.open("On hold")
    assert cli("case", "block", task, "--reason", "waiting on staging").code == 0

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            resumed, result = await s.call("cortex_unblock", task_id=task, reason="staging is up")
            assert resumed["ok"], resumed
            assert resumed["data"]["status"] == "orienting"
            again, result = await s.call("cortex_unblock", task_id=task, reason="again")
            assert again["error"]["code"] == "refused"
            assert (result.meta or {}).get("cortex/exitStatus") == 5

    run_async(body)
    phases = (case_path(served, task) / "phases.jsonl").read_text().splitlines()
    last = json.loads(phases[-1])
    assert (last["from"], last["to"], last["reason"]) == ("blocked", "orienting", "staging is up")
    # The refused second call is counted like a refused CLI command, outside the case.
    refusals = (case_path(served, task) / "refusals.jsonl").read_text().splitlines()
    assert [(json.loads(r)["operation"], json.loads(r)["code"]) for r in refusals] == [
        ("case.unblock", "refused")
    ]


def test_without_an_actor_the_server_acts_as_mcp_even_for_the_lease(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    """Issue 29: README says the server acts as `mcp` unless a call names an actor, but
    begin_change without one was refused. The server's own token keeps holders apart."""
    env = {k: v for k, v in served.items() if k != "CORTEX_ACTOR"}
    cli = Cli(env, repo)

    async def body() -> None:
        async with serving(repo, env, errlog) as s:
            opened, _ = await s.call("cortex_open_task", goal="Fix the login")
            task = opened["data"]["taskId"]
            await s.call("cortex_record_evidence", task_id=task, claim="login is wrong")
            await s.call(
                "cortex_plan", task_id=task, hypotheses=["login is wrong :: a test passes"],
                uncertainty="none", files=["app.py"], boundary_reason="there",
                verify=["command:unit"],
            )  # fmt: skip
            taken, _ = await s.call("cortex_begin_change", task_id=task)
            assert taken["ok"], taken
            assert taken["data"]["lease"]["actor"] == "mcp"
            # Another holder by the same name (a CLI without the token) is still kept out.
            other = cli("case", "verify", task, "--actor", "mcp")
            assert other.envelope["error"]["code"] == "lease_conflict"

    run_async(body)


def test_no_tool_calls_a_resumable_step_terminal() -> None:
    """Issue 29: cortex_block called itself "Terminal", yet cortex_unblock resumes it."""
    from cortex.mcp.tools import BY_NAME

    block = BY_NAME["cortex_block"].description
    assert "terminal" not in block.lower()
    assert "cortex_unblock" in block


TOOLS_LIST_BUDGET = 32 * 1024
"""Bytes of `tools/list` a host loads at every session start (issue 30)."""


def test_tools_list_stays_within_its_budget(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """Every tool's name, description, input schema and hints, as sent, in at most 32 KB."""
    with raw_server(repo, served, tmp_path) as s:
        ident = s.request("tools/list", {})
        assert s.wait_for(ident, 30) is not None
        (line,) = [line for line in s.lines if json.loads(line).get("id") == ident]
    listing = json.loads(line)["result"]["tools"]
    assert len(listing) == len(EXPECTED_TOOLS)
    assert all("outputSchema" not in tool for tool in listing)
    assert len(line) <= TOOLS_LIST_BUDGET, f"tools/list is {len(line):,} bytes"
