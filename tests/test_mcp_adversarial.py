"""Adversarial tests for `cortex serve` (the MCP server) and `cortex setup claude|codex`.

Every attack here ran against the real thing: a `python -m cortex serve` process spoken to over
raw JSON-RPC or the SDK's stdio client, and `python -m cortex setup` (or the in-process CLI) on
real files. Attacks that were defended are plain tests that guard the behaviour; each confirmed
defect is a strict xfail whose reason starts with "BUG:", so it fails loudly once fixed.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from conftest import Cli, case_path, configure_verifiers, ready_to_verify
from fswatch import Watcher
from mcp_kit import RawServer, envelope_in, envelope_of, pid_alive, raw_server, read_pids, slow_case
from stand_ins import leased

from cortex.kernel.host import hooks as hook_set
from cortex.kernel.host import writing
from cortex.mcp import tools as mcp_tools

TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"
"""A GitHub-token-shaped value: the built-in redaction rules mask it."""
LITERAL = "tenant-7731"
"""A configured redaction literal (`CORTEX_REDACT_LITERALS`): nothing built in would mask it."""
MISSING_TASK = "task_01J00000000000000000000000"
COMMAND = "cortex"
ARGS = ["serve"]
"""The server entry setup writes when this installation's `cortex` is on PATH (the `env`
fixture below): the portable form (docs/design/hosts.md, section 7)."""


@pytest.fixture
def env(env: dict[str, str]) -> dict[str, str]:
    """The test's environment with this installation's `cortex` first on PATH, as after `pipx
    install` or in an activated virtualenv. Setup's project scope is refused without it, before
    the file is read; the attacks here are on the files (tests/test_host_setup.py has the
    program forms). The servers started here run `sys.executable` by its path either way."""
    return {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]}


# ---------------------------------------------------------------------------------------------
# A raw JSON-RPC client over a real `python -m cortex serve` process.
# ---------------------------------------------------------------------------------------------


def store_bytes(state: Path) -> dict[str, bytes]:
    """Every file of the store but the lock files (taking a lock rewrites its holder note)."""
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def stderr_text(tmp_path: Path) -> str:
    path = tmp_path / "serve-stderr.txt"
    return path.read_text(errors="replace") if path.exists() else ""


def cli_audit(env: dict[str, str], repo: Path, task: str) -> None:
    audit = Cli(env, repo)("case", "audit", task)
    assert audit.code == 0, audit.stdout
    assert audit.envelope["data"]["ok"] is True


@pytest.fixture
def served(env: dict[str, str], repo: Path) -> dict[str, str]:
    """An approved quick `unit` verifier, and a server acting as agent-1."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('unit: 3 passed')"]})
    return {**env, "CORTEX_APPROVE_COMMANDS": "1", "CORTEX_ACTOR": "agent-1"}


# ---------------------------------------------------------------------------------------------
# MCP: malformed requests and arguments.
# ---------------------------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("arguments", [["task_id"], "task_id", 7, True], ids=repr)
def test_non_object_arguments_answer_with_an_envelope(
    served: dict[str, str], repo: Path, tmp_path: Path, arguments: Any
) -> None:
    with raw_server(repo, served, tmp_path) as s:
        reply = s.call("cortex_status", arguments)
        envelope, status = envelope_of(reply)
        assert status == 4
        assert envelope["error"]["code"] == "invalid_input"


@pytest.mark.process
@pytest.mark.parametrize(
    "line",
    [
        # A lone surrogate escape: valid JSON text, but no Unicode scalar value.
        pytest.param(
            '{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":'
            '{{"name":"cortex_open_task","arguments":{{"goal":"a\\ud800b"}}}}}}',
            id="lone-surrogate-in-an-argument",
        ),
        pytest.param(
            '{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":'
            '{{"name":"cortex_\\udfff","arguments":{{}}}}}}',
            id="lone-surrogate-in-the-tool-name",
        ),
        pytest.param(
            '{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":'
            '{{"name":"cortex_note","arguments":{{"task_id":"t","text":'
            + "[" * 1000
            + "]" * 1000
            + "}}}}}}",
            id="1000-deep-array",
        ),
    ],
)
def test_an_unparsable_request_still_gets_an_answer(
    served: dict[str, str], repo: Path, tmp_path: Path, line: str
) -> None:
    with raw_server(repo, served, tmp_path) as s:
        ident = s.new_id()
        s.send(line.format(id=ident).encode())
        reply = s.wait_for(ident, 3)
        assert reply is not None, "the request got no reply at all"
        # Either an envelope (exit 4) or a JSON-RPC error is an answer; silence is not.
        if "result" in reply:
            assert envelope_of(reply)[1] == 4
        else:
            assert reply["error"]["code"] in {-32700, -32600, -32602}


@pytest.mark.process
def test_the_server_keeps_serving_after_every_kind_of_bad_line(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """Garbage, hostile JSON and bad arguments: afterwards the server still answers, stdout
    held only JSON-RPC, stderr no traceback, and the exit is clean."""
    state = Path(served["CORTEX_STATE_DIR"])
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "bad lines"}))[0]["data"]["taskId"]
        before = store_bytes(state)
        hostile = [
            b"not json at all",
            b"{",
            b"[]",
            b"null",
            b'{"jsonrpc":"2.0","id":"x","method":"nope"}',
            b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"cortex_note"}}',
            (
                b'{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":'
                b'{"name":"cortex_open_task","arguments":{"goal":"a\\ud800b"}}}'
            ),
            b'{"jsonrpc":"2.0","id":9002,"method":"tools/call","params":{"name":"cortex_note",'
            b'"arguments":{"task_id":"t","text":' + b"[" * 100_000 + b"]" * 100_000 + b"}}}",
            b'{"jsonrpc":"2.0","id":9003,"method":"tools/call","params":{"name":null}}',
            (
                b'{"jsonrpc":"2.0","id":9004,"method":"tools/call","params":'
                b'{"name":"cortex_status","arguments":[1,2]}}'
            ),
            b"\xff\xfe\x00garbage bytes\x80",
        ]
        for line in hostile:
            s.send(line)
        reply = s.call("cortex_status", {"task_id": task}, timeout=30)
        envelope, status = envelope_of(reply, s)
        assert status == 0
        assert envelope["data"]["revision"] == 1
        # Nothing any of those lines carried reached the store.
        assert store_bytes(state) == before
        code = s.finish()
    assert code == 0
    for raw in s.lines:
        assert json.loads(raw)["jsonrpc"] == "2.0", raw[:200]
    assert "Traceback" not in stderr_text(tmp_path)
    cli_audit(served, repo, task)


@pytest.mark.process
def test_null_or_absent_arguments_are_bad_input(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, served, tmp_path) as s:
        nothing: tuple[Any, ...] = (None, ..., {})
        for arguments in nothing:
            envelope, status = envelope_of(s.call("cortex_status", arguments), s)
            assert status == 4
            assert "task_id" in envelope["error"]["message"]
        # A tool with no required argument accepts null as "no arguments".
        envelope, status = envelope_of(s.call("cortex_list_tasks", None), s)
        assert status == 0


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], int]] = [
    ("cortex_status", {"task_id": "{task}", "bogus": 1}, 4),
    ("cortex_status", {"task_id": 7}, 4),
    ("cortex_status", {"task_id": None}, 4),
    ("cortex_status", {"task_id": ["{task}"]}, 4),
    ("cortex_status", {"task_id": {"$ref": "x"}}, 4),
    ("cortex_note", {"task_id": "{task}"}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "x", "origin": "god"}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "x", "expect_revision": "1"}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "x", "expect_revision": 1.5}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "a\x00b"}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "a\x1b[31mred\x07"}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "n" * (4 << 20)}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "x", "actor": TOKEN}, 4),
    ("cortex_note", {"task_id": "{task}", "text": "x", "actor": "a\nb"}, 4),
    ("cortex_open_task", {"goal": "g" * (8 << 20)}, 4),
    ("cortex_open_task", {"goal": "g", "mode": "delete"}, 4),
    ("cortex_open_task", {"goal": "g", "surfaces": ["code"] * 100_000}, 4),
    ("cortex_open_task", {"goal": "g", "criteria": ["no equals sign"]}, 4),
    ("cortex_open_task", {"goal": "g", "parent": "../../etc"}, 4),
    ("cortex_list_tasks", {"limit": True}, 4),
    ("cortex_list_tasks", {"limit": 10**40}, 4),
    ("cortex_list_tasks", {"limit": -1}, 4),
    ("cortex_timeline", {"task_id": "{task}", "limit": 0}, 4),
    ("cortex_timeline", {"task_id": "{task}", "cursor": "A" * 5000}, 4),
    ("cortex_timeline", {"task_id": "{task}", "since": "yesterday"}, 4),
    ("cortex_record_evidence", {"task_id": "{task}", "claim": "c", "line": "0"}, 4),
    ("cortex_record_evidence", {"task_id": "{task}", "claim": "c", "raw": "r" * (17 << 20)}, 4),
    ("cortex_record_evidence", {"task_id": "{task}", "claim": "c", "derived_from": ["x"]}, 4),
    ("cortex_read_artifact", {"task_id": "{task}", "ref": "x", "max_bytes": 10**20}, 4),
    ("cortex_begin_change", {"task_id": "{task}", "ttl": "9" * 40 + "h"}, 4),
    ("cortex_request_decision", {"task_id": "{task}", "question": "q", "options": ["a=A"]}, 4),
    (
        "cortex_resolve",
        {"task_id": "{task}", "hypothesis_id": "h", "status": "x", "reason": "r"},
        4,
    ),
    ("cortex_answer_decision", {"task_id": "{task}", "option": "yes"}, 4),
    ("cortex_trust", {"name": "unit"}, 4),
    ("", {}, 4),
    ("x" * 100_000, {}, 4),
]


@pytest.mark.process
def test_bad_arguments_answer_with_one_envelope_and_write_nothing(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    state = Path(served["CORTEX_STATE_DIR"])
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "bad args"}))[0]["data"]["taskId"]
        before = store_bytes(state)
        for name, arguments, expected in BAD_ARGUMENTS:
            filled = json.loads(json.dumps(arguments).replace("{task}", task))
            envelope, status = envelope_of(s.call(name, filled), s)
            assert status == expected, (name[:40], envelope)
            assert envelope["ok"] is False
        assert store_bytes(state) == before
        assert s.finish() == 0
    assert "Traceback" not in stderr_text(tmp_path)


@pytest.mark.process
def test_unicode_oddities(served: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """Bytes that are not UTF-8 become U+FFFD (never a crash); astral characters round-trip."""
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "unicode"}))[0]["data"]["taskId"]
        ident = s.new_id()
        s.send(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"cortex_note",'
            b'"arguments":{"task_id":"%s","text":"bad \xff\xfe bytes"}}}' % (ident, task.encode())
        )
        reply = s.wait_for(ident, 30)
        assert reply is not None
        envelope, status = envelope_of(reply)
        assert status == 0
        assert envelope["data"]["evidence"]["claim"] == "bad \ufffd\ufffd bytes"
        odd = "\U0001f600 \u2028 \u200b \ufeff \U0010fffd"
        envelope, status = envelope_of(s.call("cortex_note", {"task_id": task, "text": odd}))
        assert status == 0
        assert envelope["data"]["evidence"]["claim"] == odd
        assert s.finish() == 0
    cli_audit(served, repo, task)


@pytest.mark.process
def test_path_traversal_is_refused_and_nothing_is_written_outside_the_state_dir(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    state = Path(served["CORTEX_STATE_DIR"])
    secret = tmp_path / "outside.txt"
    secret.write_text("not yours\n")
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "trav"}))[0]["data"]["taskId"]
        other = envelope_of(s.call("cortex_open_task", {"goal": "other"}))[0]["data"]["taskId"]
        other_raw = envelope_of(
            s.call("cortex_record_evidence", {"task_id": other, "claim": "c", "raw": "theirs\n"})
        )[0]["data"]["evidence"]["rawRef"]
        attacks: list[tuple[str, dict[str, Any]]] = [
            ("cortex_status", {"task_id": "task_../../../etc"}),
            ("cortex_status", {"task_id": "../" + task}),
            ("cortex_status", {"task_id": task + "/../" + other}),
            ("cortex_status", {"task_id": task + "\x00"}),
            ("cortex_read_artifact", {"task_id": task, "ref": f"case://{task}/raw/../../x"}),
            ("cortex_read_artifact", {"task_id": task, "ref": str(secret)}),
            ("cortex_read_artifact", {"task_id": task, "ref": f"file://{secret}"}),
            ("cortex_read_artifact", {"task_id": task, "ref": other_raw}),
            ("cortex_read_artifact", {"task_id": task, "ref": other_raw.replace(other, task)}),
            ("cortex_read_evidence", {"task_id": task, "evidence_id": "../../case.json"}),
            ("cortex_record_evidence", {"task_id": task, "claim": "c", "file": "../outside.txt"}),
            ("cortex_record_evidence", {"task_id": task, "claim": "c", "file": str(secret)}),
            ("cortex_record_evidence", {"task_id": task, "claim": "c", "file": "a/./../b"}),
            ("cortex_plan", {"task_id": task, "hypotheses": ["a :: b"], "files": ["../../"]}),
            ("cortex_plan", {"task_id": task, "hypotheses": ["a :: b"], "files": ["/etc/"]}),
            ("cortex_open_task", {"goal": "g", "parent": f"{task}/.."}),
            ("cortex_timeline", {"task_id": task, "anchor": "../../../etc/passwd"}),
        ]
        with Watcher(tmp_path) as watcher:
            for name, arguments in attacks:
                envelope, status = envelope_of(s.call(name, arguments), s)
                assert status in {3, 4, 5}, (name, arguments, envelope)
                assert "not yours" not in json.dumps(envelope)
                assert "theirs" not in json.dumps(envelope)
            time.sleep(0.1)
            events = watcher.events()
        assert s.finish() == 0
    outside = [e for e in events if not e.split(" ", 1)[1].startswith(str(state))]
    outside = [e for e in outside if "serve-stderr.txt" not in e]
    assert outside == []
    # A refused call never reached the case files (the lock's holder note may be rewritten).
    assert [e for e in events if ".lock" not in e] == []
    assert secret.read_text() == "not yours\n"


@pytest.mark.process
def test_write_tools_write_only_inside_the_state_dir(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    state = Path(served["CORTEX_STATE_DIR"])
    cli = Cli(served, repo)
    # The server takes the lease itself: it holds only the tokens its own calls were given.
    ready = ready_to_verify(cli, verify=("command:unit",), lease=False)
    (repo / "app.py").write_text("print('fixed')\n")
    with raw_server(repo, served, tmp_path) as s, Watcher(tmp_path) as watcher:
        task = envelope_of(s.call("cortex_open_task", {"goal": "writes"}))[0]["data"]["taskId"]
        calls: list[tuple[str, dict[str, Any]]] = [
            ("cortex_note", {"task_id": task, "text": "n"}),
            ("cortex_record_evidence", {"task_id": task, "claim": "c", "raw": "raw\n"}),
            (
                "cortex_request_decision",
                {"task_id": task, "question": "q", "options": ["a=A", "b=B"]},
            ),
            ("cortex_abort_task", {"task_id": task, "reason": "done"}),
            ("cortex_begin_change", {"task_id": ready}),
            ("cortex_verify", {"task_id": ready}),
            ("cortex_complete", {"task_id": ready, "outcome": "fixed"}),
        ]
        for name, arguments in calls:
            envelope, status = envelope_of(s.call(name, arguments), s)
            assert status == 0, (name, envelope)
        time.sleep(0.1)
        events = watcher.events()
        assert s.finish() == 0
    # Besides the state dir, only the recall index is written: a cache under the cache root.
    cache = Path(served["HOME"]) / ".cache" / "cortex" / "recall"
    outside = [e for e in events if not e.split(" ", 1)[1].startswith((str(state), str(cache)))]
    assert [e for e in outside if "serve-stderr.txt" not in e] == []


# ---------------------------------------------------------------------------------------------
# MCP: redaction, and the same answer as the CLI.
# ---------------------------------------------------------------------------------------------


@pytest.mark.process
def test_secrets_come_back_redacted_on_both_surfaces(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    cli = Cli(served, repo)
    cli_task = cli.open("secrets")
    cli_answers = [
        cli("case", "evidence", "add", cli_task, "--claim", f"log shows {TOKEN}").stdout,
        cli("case", "note", cli_task, f"password={TOKEN}").stdout,
        cli("case", "status", TOKEN).stdout,
        cli("case", "open", "g", "--mode", TOKEN).stdout,
        cli("case", "read-artifact", cli_task, f"case://{cli_task}/raw/{TOKEN}").stdout,
    ]
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "secrets"}))[0]["data"]["taskId"]
        replies = [
            s.call("cortex_record_evidence", {"task_id": task, "claim": f"log shows {TOKEN}"}),
            s.call("cortex_note", {"task_id": task, "text": f"password={TOKEN}"}),
            s.call("cortex_status", {"task_id": TOKEN}),
            s.call("cortex_open_task", {"goal": "g", "mode": TOKEN}),
            s.call("cortex_read_artifact", {"task_id": task, "ref": f"case://{task}/raw/{TOKEN}"}),
            s.call("cortex_status", {"task_id": task, TOKEN: 1}),
            s.call("cortex_record_evidence", {"task_id": task, "claim": "c", "raw": f"k={TOKEN}"}),
        ]
        raw_ref = envelope_of(replies[-1])[0]["data"]["evidence"]["rawRef"]
        replies.append(s.call("cortex_read_artifact", {"task_id": task, "ref": raw_ref}))
        replies.append(s.call("cortex_timeline", {"task_id": task}))
        replies.append(s.call("cortex_handoff", {"task_id": task}))
        assert s.finish() == 0
    for answer in cli_answers:
        assert TOKEN not in answer
    for reply in replies:
        envelope_of(reply)
        assert TOKEN not in json.dumps(reply), reply
    assert "[REDACTED]" in json.dumps(replies[0])
    # And the store holds the redacted text only.
    for path in case_path(served, task).rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.process
@pytest.mark.parametrize(
    ("name", "arguments", "argv"),
    [
        (
            "cortex_open_task",
            {"goal": "g", "mode": LITERAL},
            ["case", "open", "g", "--mode", LITERAL],
        ),
        (
            "cortex_note",
            {"task_id": "{task}", "text": "x", "origin": LITERAL},
            ["case", "note", "{task}", "x", "--origin", LITERAL],
        ),
        ("cortex_status", {"task_id": "{task}", LITERAL: 1}, None),
        (LITERAL, {}, None),
    ],
    ids=["enum-value", "origin", "unknown-field", "unknown-tool"],
)
def test_configured_redaction_literals_cover_argument_errors(
    served: dict[str, str],
    repo: Path,
    tmp_path: Path,
    *,
    name: str,
    arguments: dict[str, Any],
    argv: list[str] | None,
) -> None:
    env = {**served, "CORTEX_REDACT_LITERALS": LITERAL}
    cli = Cli(env, repo)
    task = cli.open("literals")
    if argv is not None:
        out = cli(*[a.replace("{task}", task) for a in argv])
        assert out.code == 4
        assert LITERAL not in out.stdout  # the CLI's answer is redacted
    with raw_server(repo, env, tmp_path) as s:
        filled = json.loads(json.dumps(arguments).replace("{task}", task))
        reply = s.call(name, filled)
        assert envelope_of(reply)[1] == 4
        assert LITERAL not in json.dumps(reply)


@pytest.mark.process
def test_an_unknown_tool_name_is_not_echoed_unredacted(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, served, tmp_path) as s:
        reply = s.call(TOKEN, {})
        envelope, status = envelope_of(reply)
        assert status == 4
        assert "[REDACTED]" in envelope["error"]["message"]
        assert TOKEN not in json.dumps(reply)


def normalise(value: Any, task: str) -> Any:
    """Replace the ids, times and channels that legitimately differ between two runs."""
    text = json.dumps(value, sort_keys=True).replace(task, "TASK")
    text = re.sub(r"\b(ev|hyp|dec|rcpt|batch|raw|cmd|vr|vb)_[0-9A-Z]{26}\b", r"\1_ID", text)
    text = re.sub(r"\b[0-9a-f]{64}\b", "HASH", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME", text)
    # Each record says which face it arrived through (docs/design/trust.md).
    text = re.sub(r'"via": "(cli|cli-tty|mcp)"', '"via": "VIA"', text)
    return json.loads(text)


# (CLI argv, MCP tool, MCP arguments): the same operation on each surface's own case, in order.
PARITY: list[tuple[list[str], str, dict[str, Any]]] = [
    (["case", "note", "T", "x", "--expect-revision", "-1"], "cortex_note",
     {"task_id": "T", "text": "x", "expect_revision": -1}),
    (["case", "note", "T", "x", "--expect-revision", "99"], "cortex_note",
     {"task_id": "T", "text": "x", "expect_revision": 99}),
    (["case", "evidence", "add", "T", "--claim", "c", "--line", "0"], "cortex_record_evidence",
     {"task_id": "T", "claim": "c", "line": "0"}),
    (["case", "evidence", "add", "T", "--claim", f"saw {TOKEN}", "--file", "app.py"],
     "cortex_record_evidence", {"task_id": "T", "claim": f"saw {TOKEN}", "file": "app.py"}),
    (["case", "note", "T", "a\x01b"], "cortex_note", {"task_id": "T", "text": "a\x01b"}),
    (["case", "status", MISSING_TASK], "cortex_status", {"task_id": MISSING_TASK}),
    (["case", "read-evidence", "T", "ev_01J00000000000000000000000"], "cortex_read_evidence",
     {"task_id": "T", "evidence_id": "ev_01J00000000000000000000000"}),
    (["case", "read-artifact", "T", "nope"], "cortex_read_artifact",
     {"task_id": "T", "ref": "nope"}),
    (["case", "timeline", "T", "--cursor", "garbage"], "cortex_timeline",
     {"task_id": "T", "cursor": "garbage"}),
    (["case", "decision", "request", "T", "--question", "q", "--option", "a=A"],
     "cortex_request_decision", {"task_id": "T", "question": "q", "options": ["a=A"]}),
    (["case", "verify", "T"], "cortex_verify", {"task_id": "T"}),
    (["case", "complete", "T", "--outcome", "done"], "cortex_complete",
     {"task_id": "T", "outcome": "done"}),
    (["case", "abort", "T", "--reason", "stop"], "cortex_abort_task",
     {"task_id": "T", "reason": "stop"}),
    (["case", "abort", "T", "--reason", "again"], "cortex_abort_task",
     {"task_id": "T", "reason": "again"}),
    (["case", "note", "T", "after"], "cortex_note", {"task_id": "T", "text": "after"}),
    (["case", "status", "T"], "cortex_status", {"task_id": "T"}),
]  # fmt: skip


@pytest.mark.process
def test_cli_and_mcp_agree_on_refusals_and_redaction(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    cli = Cli(served, repo)
    cli_task = cli.open("parity")
    cli_side = []
    for argv, _, _ in PARITY:
        out = cli(*[cli_task if a == "T" else a for a in argv])
        cli_side.append((out.envelope, out.code))
    mcp_side = []
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "parity"}))[0]["data"]["taskId"]
        for _, name, arguments in PARITY:
            filled = {k: task if v == "T" else v for k, v in arguments.items()}
            mcp_side.append(envelope_of(s.call(name, filled), s))
        assert s.finish() == 0
    codes = [code for _, code in cli_side]
    assert set(codes) >= {0, 3, 4, 5, 6}, codes  # the table covers every kind of refusal
    for (argv, name, _), (cli_env, cli_code), (mcp_env, mcp_code) in zip(
        PARITY, cli_side, mcp_side, strict=True
    ):
        assert mcp_code == cli_code, argv
        left, right = normalise(mcp_env, task), normalise(cli_env, cli_task)
        # Each face names arguments and next steps its own way; everything else is the same.
        mcp_actions, cli_actions = left.pop("actions", []), right.pop("actions", [])
        if right.get("error"):
            right["error"]["message"] = mcp_spelled(right["error"]["message"], name)
        assert left == right, argv
        reasons = [a["reason"] for a in cli_actions]
        assert [a["reason"] for a in mcp_actions] == [
            r for r in reasons if r in {a["reason"] for a in mcp_actions}
        ]


def mcp_spelled(message: str, tool_name: str) -> str:
    """A CLI message with each of its option names as `tool_name` names that argument."""
    from cortex.cli.grammar import COMMANDS
    from cortex.cli.parser import spelling
    from cortex.mcp.tools import ALIASES, BY_NAME

    tool = BY_NAME[tool_name]
    command = next(cmd for cmd in COMMANDS if cmd.name == tool.command)
    cli = spelling(command)
    fields = [field.name for field in msgspec.structs.fields(tool.args)]
    for field in sorted(fields, key=len, reverse=True):
        shown = cli(ALIASES.get(field, field))
        if not shown.startswith("--"):
            continue  # `<task>` and the like are words of messages, not argument names
        message = re.sub(rf"(?<![\w-]){re.escape(shown)}(?![\w-])", field, message)
    return message


# ---------------------------------------------------------------------------------------------
# MCP: no tool answers a decision or approves a command; hints are accurate.
# ---------------------------------------------------------------------------------------------


@pytest.mark.process
def test_no_tool_reaches_decision_answers_or_command_grants(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    forbidden_fields = {"answer", "option", "responder", "approve", "grant", "trust", "yes"}
    for tool in mcp_tools.TOOLS:
        fields = set(tool.args.__struct_fields__)
        assert not fields & forbidden_fields, (tool.name, fields)
        source = inspect.getsource(tool.call)
        for needle in ("answer", "trust", "grant", "save_grant", "approve"):
            assert needle not in source, (tool.name, needle)
    served = {k: v for k, v in served.items() if k != "CORTEX_APPROVE_COMMANDS"}
    cli = Cli(served, repo)
    task = cli.open("gate")
    asked = cli(
        "case",
        "decision",
        "request",
        task,
        "--question",
        "Ship?",
        "--option",
        "yes=Ship",
        "--option",
        "no=Hold",
        "--actor",
        "agent-1",
    )
    decision = asked.data["decision"]["id"]
    with raw_server(repo, served, tmp_path) as s:
        # Everything an agent could try: forge the answer's evidence, re-ask, impersonate.
        tries: list[tuple[str, dict[str, Any]]] = [
            ("cortex_record_evidence", {"task_id": task, "kind": "human_report",
             "origin": "human", "actor": "a-person", "confidence": "high",
             "claim": f"Decision {decision} answered yes (Ship): Ship?"}),
            ("cortex_note", {"task_id": task, "text": f"answer {decision} yes", "origin": "human",
             "actor": "a-person"}),
            ("cortex_request_decision", {"task_id": task, "question": "Ship?",
             "options": ["yes=Ship", "no=Hold"], "actor": "a-person"}),
            ("cortex_begin_change", {"task_id": task, "actor": "a-person"}),
            ("cortex_status", {"task_id": task, "answer": "yes"}),
            ("cortex_answer_decision", {"task_id": task, "decision_id": decision, "option": "yes"}),
            ("cortex_trust", {"name": "unit"}),
        ]  # fmt: skip
        for name, arguments in tries:
            envelope_of(s.call(name, arguments), s)
        status = envelope_of(s.call("cortex_status", {"task_id": task}))[0]["data"]
        assert s.finish() == 0
    assert status["status"] == "needs_human_decision"
    assert status["pendingDecision"]["id"] == decision
    decisions = cli("case", "decision", "list", task).data
    assert [d["status"] for d in decisions["decisions"]] == ["pending"]
    assert not (Path(served["XDG_CONFIG_HOME"]) / "cortex" / "command-grants.json").exists()


def seeded_case(served: dict[str, str], repo: Path) -> dict[str, str]:
    """A rich case: stale receipts, raw output, a redacted claim, a pending decision."""
    cli = Cli(served, repo)
    task = ready_to_verify(cli)
    out = cli(
        "case",
        "evidence",
        "add",
        task,
        "--claim",
        f"log shows {TOKEN}",
        "--raw-file",
        "-",
        stdin=b"raw tool output\n",
    )
    ids = {
        "task": task,
        "evidence": out.data["evidence"]["id"],
        "raw": out.data["evidence"]["rawRef"],
    }
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).code == 0
    (repo / "app.py").write_text("print('edited after the proof')\n")
    asked = cli(
        "case",
        "decision",
        "request",
        task,
        "--question",
        "Ship it?",
        "--option",
        "yes=Ship",
        "--option",
        "no=Hold",
    )
    assert asked.code == 0, asked.stdout
    return ids


@pytest.mark.process
def test_read_only_tools_write_nothing_anywhere(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    ids = seeded_case(served, repo)
    task = ids["task"]
    read_only = {t.name for t in mcp_tools.TOOLS if t.read_only}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("cortex_status", {"task_id": task}),
        ("cortex_status", {"task_id": MISSING_TASK}),
        ("cortex_list_tasks", {}),
        ("cortex_list_tasks", {"limit": 1}),
        ("cortex_read_evidence", {"task_id": task, "evidence_id": ids["evidence"]}),
        ("cortex_read_evidence", {"task_id": task, "evidence_id": "ev_01J00000000000000000000000"}),
        ("cortex_read_artifact", {"task_id": task, "ref": ids["raw"]}),
        ("cortex_read_artifact", {"task_id": task, "ref": ids["raw"], "max_bytes": 1}),
        ("cortex_timeline", {"task_id": task}),
        ("cortex_timeline", {"task_id": task, "kinds": ["receipt"], "limit": 1}),
        ("cortex_timeline", {"task_id": task, "anchor": ids["evidence"], "before": 2, "after": 2}),
        ("cortex_timeline", {"task_id": task, "cursor": "bogus"}),
        ("cortex_handoff", {"task_id": task}),
        ("cortex_handoff", {"task_id": task, "compact": True}),
        ("cortex_recall", {"query": "log shows"}),
        ("cortex_recall", {"query": "x", "kinds": ["evidence"], "limit": 1, "budget": 5}),
        ("cortex_recall_get", {"ids": ["ev_01J00000000000000000000000"]}),
        ("cortex_review", {}),
        ("cortex_review", {"base": "HEAD", "head": "HEAD"}),
    ]
    assert {name for name, _ in calls} == read_only
    with raw_server(repo, served, tmp_path) as s:
        envelope_of(s.call("cortex_status", {"task_id": task}))  # warm: imports, first kernel
        for name, arguments in calls:
            with Watcher(tmp_path) as watcher:
                envelope_of(s.call(name, arguments), s)
                time.sleep(0.05)
                events = [e for e in watcher.events() if "serve-stderr.txt" not in e]
            assert events == [], (name, arguments, events)
        assert s.finish() == 0


@pytest.mark.process
def test_idempotent_tools_change_nothing_on_a_repeat(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    cli = Cli(served, repo)
    task = ready_to_verify(cli, lease=False)
    ledgers = ("evidence.jsonl", "phases.jsonl", "decisions.json", "plan.json", "case.json")
    with raw_server(repo, served, tmp_path) as s:
        # begin_change by its holder: renews the lease, and changes nothing else. (The server
        # takes the lease first: it holds only the tokens its own calls were given.)
        first = envelope_of(s.call("cortex_begin_change", {"task_id": task}))[0]["data"]
        home = case_path(served, task)
        before = {n: (home / n).read_bytes() for n in ledgers[:2] if (home / n).exists()}
        status_before = envelope_of(s.call("cortex_status", {"task_id": task}))[0]["data"]
        again = envelope_of(s.call("cortex_begin_change", {"task_id": task}))[0]["data"]
        status_after = envelope_of(s.call("cortex_status", {"task_id": task}))[0]["data"]
        assert again["lease"]["actor"] == first["lease"]["actor"] == "agent-1"
        assert status_after["status"] == status_before["status"] == "changing"
        assert status_after["counts"]["evidence"] == status_before["counts"]["evidence"]
        assert status_after["counts"]["phases"] == status_before["counts"]["phases"]
        assert {n: (home / n).read_bytes() for n in before} == before
        # request_decision repeated: coalesced, not a byte of the case changes.
        ask = {"task_id": task, "question": "Ship?", "options": ["y=Yes", "n=No"]}
        made = envelope_of(s.call("cortex_request_decision", ask))[0]["data"]
        assert made["created"] is True
        snapshot = store_bytes(Path(served["CORTEX_STATE_DIR"]))
        for _ in range(3):
            repeat = envelope_of(s.call("cortex_request_decision", ask))[0]["data"]
            assert repeat["created"] is False
            assert repeat["decision"]["id"] == made["decision"]["id"]
        assert store_bytes(Path(served["CORTEX_STATE_DIR"])) == snapshot
        assert s.finish() == 0
    cli_audit(served, repo, task)


# ---------------------------------------------------------------------------------------------
# MCP: concurrency inside one server, slow verifiers, shutdown and signals.
# ---------------------------------------------------------------------------------------------


@pytest.mark.process
def test_many_calls_in_flight_in_one_server_keep_the_case_sound(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cli = Cli(served, repo)
    task = ready_to_verify(cli, lease=False)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex", "serve"], cwd=str(repo), env=served
    )
    problems: list[str] = []
    leases: list[str] = []

    async def body() -> None:
        with (tmp_path / "sdk-stderr.txt").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                # The holder takes the lease through this server, which then holds its token.
                taken = await client.call_tool(
                    "cortex_begin_change", {"task_id": task, "actor": "agent-1"}
                )
                assert not taken.is_error, taken

                async def one(seq: int) -> None:
                    args: dict[str, Any]
                    kind = seq % 5
                    if kind == 0:
                        name, args = "cortex_note", {"task_id": task, "text": f"note {seq}"}
                    elif kind == 1:
                        name, args = (
                            "cortex_record_evidence",
                            {"task_id": task, "claim": f"claim {seq}", "raw": f"raw {seq}\n"},
                        )
                    elif kind == 2:
                        name, args = "cortex_status", {"task_id": task}
                    elif kind == 3:
                        name, args = "cortex_timeline", {"task_id": task, "limit": 5}
                    else:
                        actor = "agent-1" if seq % 2 else "intruder"
                        name, args = "cortex_begin_change", {"task_id": task, "actor": actor}
                    result = await client.call_tool(name, args)
                    assert isinstance(result, types.CallToolResult)
                    envelope = envelope_in(result)
                    assert isinstance(envelope, dict)
                    if name == "cortex_begin_change":
                        if envelope["ok"]:
                            leases.append(args["actor"])
                    elif result.is_error:
                        problems.append(f"{name} {seq}: {envelope}")

                async with anyio.create_task_group() as group:
                    for seq in range(60):
                        group.start_soon(one, seq)

    async def bounded() -> None:
        with anyio.fail_after(120):
            await body()

    anyio.run(bounded)
    assert problems == []
    assert set(leases) == {"agent-1"}, "only the holder renews; the intruder is refused"
    claims = [
        json.loads(line)["claim"]
        for line in (case_path(served, task) / "evidence.jsonl").read_text().splitlines()
    ]
    for seq in range(60):
        if seq % 5 == 0:
            assert claims.count(f"note {seq}") == 1
        if seq % 5 == 1:
            assert claims.count(f"claim {seq}") == 1
    cli_audit(served, repo, task)


def take_lease(server: RawServer, task: str) -> None:
    """The server takes the change lease (and so holds its token, for its connection)."""
    envelope, status = envelope_of(server.call("cortex_begin_change", {"task_id": task}))
    assert status == 0, envelope


@pytest.mark.process
def test_a_slow_verify_does_not_block_other_calls(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with (
        slow_case(served, repo, tmp_path, 3) as (task, pids),
        raw_server(repo, served, tmp_path) as s,
    ):
        take_lease(s, task)
        verifying = s.start_call("cortex_verify", {"task_id": task})
        assert read_pids(pids), "the verifier did not start"
        started = time.monotonic()
        envelope, status = envelope_of(s.call("cortex_status", {"task_id": task}, timeout=2))
        assert status == 0
        ping = s.request("ping", {})
        assert s.wait_for(ping, 2) is not None
        envelope, status = envelope_of(
            s.call("cortex_note", {"task_id": task, "text": "meanwhile"})
        )
        assert status == 0
        assert time.monotonic() - started < 2, "calls waited for the verifier"
        assert s.wait_for(verifying, 0) is None, "the verifier cannot have finished yet"
        reply = s.wait_for(verifying, 60)
        assert reply is not None
        envelope, status = envelope_of(reply, s)
        assert envelope["ok"], envelope
        assert s.finish() == 0
    cli_audit(served, repo, task)


@pytest.mark.process
def test_closing_stdin_mid_verify_finishes_the_write_and_exits_cleanly(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with (
        slow_case(served, repo, tmp_path, 1.5) as (task, pids),
        raw_server(repo, served, tmp_path) as s,
    ):
        take_lease(s, task)
        s.start_call("cortex_verify", {"task_id": task})
        verifier = read_pids(pids)
        assert verifier
        s.close_stdin()
        assert s.proc.wait(timeout=60) == 0
        assert not any(pid_alive(pid) for pid in verifier)
    cli_audit(served, repo, task)
    # The run that was in flight when stdin closed was finished and recorded.
    assert Cli(served, repo)("case", "status", task).data["status"] == "verifying"


@pytest.mark.process
def test_closing_stdin_with_writes_in_flight_leaves_a_sound_case(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, served, tmp_path) as s:
        task = envelope_of(s.call("cortex_open_task", {"goal": "eof"}))[0]["data"]["taskId"]
        for n in range(40):
            s.start_call(
                "cortex_record_evidence", {"task_id": task, "claim": f"c{n}", "raw": "r" * 5000}
            )
        s.close_stdin()
        assert s.proc.wait(timeout=60) == 0
    cli_audit(served, repo, task)
    claims = [
        json.loads(line)["claim"]
        for line in (case_path(served, task) / "evidence.jsonl").read_text().splitlines()
    ]
    assert len(claims) == len(set(claims))
    assert set(claims) <= {f"c{n}" for n in range(40)}


@pytest.mark.process
def test_sigterm_mid_verify_leaves_a_sound_case(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with (
        slow_case(served, repo, tmp_path, 30) as (task, pids),
        raw_server(repo, served, tmp_path) as s,
    ):
        take_lease(s, task)
        s.start_call("cortex_verify", {"task_id": task})
        verifier = read_pids(pids)
        assert len(verifier) == 2
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=30)
        time.sleep(0.3)
        # Neither the verifier nor its own child outlives the server (the CLI's behaviour).
        assert [pid for pid in verifier if pid_alive(pid)] == []
    cli_audit(served, repo, task)
    # The interrupted run left no lock behind: the next write goes through at once.
    assert (
        Cli({**served, "CORTEX_LOCK_TIMEOUT": "2"}, repo)("case", "note", task, "after").code == 0
    )


@pytest.mark.process
def test_the_cli_kills_the_whole_verifier_group_on_sigterm(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """The reference behaviour the server should match."""
    with slow_case(served, repo, tmp_path, 30) as (task, pids):
        assert Cli(served, repo)("case", "begin-change", task, "--actor", "agent-1").code == 0
        argv = ["case", "verify", task, "--json"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "cortex", *argv],
            cwd=repo,
            env=leased(served, argv),  # the lease token the CLI was given (tests/stand_ins.py)
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            verifier = read_pids(pids)
            assert len(verifier) == 2
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 143
            time.sleep(0.3)
            assert [pid for pid in verifier if pid_alive(pid)] == []
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        cli_audit(served, repo, task)


@pytest.mark.process
def test_sigint_stops_the_server(served: dict[str, str], repo: Path, tmp_path: Path) -> None:
    with raw_server(repo, served, tmp_path) as s:
        envelope_of(s.call("cortex_list_tasks", {}))
        s.proc.send_signal(signal.SIGINT)
        try:
            code = s.proc.wait(timeout=4)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            s.finish(timeout=30)
        assert code == 130


@pytest.mark.process
def test_sigint_mid_verify_leaves_a_sound_case_and_no_stray_process(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with (
        slow_case(served, repo, tmp_path, 1.5) as (task, pids),
        raw_server(repo, served, tmp_path) as s,
    ):
        take_lease(s, task)
        s.start_call("cortex_verify", {"task_id": task})
        verifier = read_pids(pids)
        assert len(verifier) == 2
        s.proc.send_signal(signal.SIGINT)
        s.finish(timeout=60)
        time.sleep(0.3)
        assert [pid for pid in verifier if pid_alive(pid)] == []
    cli_audit(served, repo, task)


@pytest.mark.process
def test_mcp_is_not_imported_by_other_commands(cli: Cli) -> None:
    heavy = ("mcp", "mcp.", "mcp_types", "cortex.mcp", "anyio", "pydantic", "starlette")
    for argv in (
        ["setup", "claude", "--dry-run"],
        ["setup", "codex", "--dry-run"],
        ["doctor"],
        ["case", "list"],
        ["--help"],
        ["serve", "--help"],
        ["no-such-command"],
    ):
        probe = (
            "import io, sys\n"
            "from cortex.main import main\n"
            f"code = main({[*argv, '--json']!r}, stdout=io.StringIO(), stderr=io.StringIO())\n"
            "sys.stdout.write(' '.join(sorted(sys.modules)))\n"
            "sys.exit(code)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=cli.cwd,
            env=cli.env,
            capture_output=True,
            check=False,
        )
        loaded = proc.stdout.decode().split()
        assert "cortex.main" in loaded, proc.stderr
        if argv[0] == "setup":
            # The whole dry run (both files composed), not a refusal before any of it.
            assert proc.returncode == 0, argv
        assert [m for m in loaded if m == "mcp" or m.startswith(heavy)] == [], argv


# ---------------------------------------------------------------------------------------------
# `cortex setup`: hostile JSON.
# ---------------------------------------------------------------------------------------------


def strict_json(text: str | bytes) -> Any:
    """Parse as JSON the way a strict host (JavaScript's JSON.parse) would: no NaN/Infinity."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def stray_temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".tmp-"))


def codex_config(env: dict[str, str]) -> Path:
    path = Path(env["HOME"]) / ".codex" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    return path


def hooks_path(env: dict[str, str], repo: Path, host: str) -> Path:
    """Where setup puts the hook set for each host's default scope (spelled out, not computed):
    Claude Code's project settings, Codex's hooks.json beside config.toml."""
    return repo / ".claude" / "settings.json" if host == "claude" else codex_hooks(env)


def codex_hooks(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".codex" / "hooks.json"


EVENTS = {
    "claude": ["SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact",
               "PreToolUse", "PostToolUse", "PostToolUseFailure"],
    "codex": ["SessionStart", "UserPromptSubmit", "Stop", "PostToolUse"],
}  # fmt: skip
"""The events of each host's hook set, in order (docs/design/hosts.md, section 7)."""


def our_hooks(host: str) -> list[str]:
    """The hook commands setup writes, in order, with `cortex` from PATH."""
    flag = "" if host == "claude" else f" --host {host}"
    digest = hook_set.digest(host)
    return [f"{COMMAND} hook {event}{flag} --template {digest}" for event in EVENTS[host]]


def hook_commands(path: Path) -> list[str]:
    """Every hook command in a hooks file, in order, read as a strict host would."""
    document = strict_json(path.read_bytes())
    return [
        hook["command"]
        for groups in document["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    ]


def test_json_number_beyond_double_range_keeps_the_file_json(cli: Cli, repo: Path) -> None:
    path = repo / ".mcp.json"
    original = b'{"limits": {"huge": 1e400, "tiny": -1e400}}'
    path.write_bytes(original)
    out = cli("setup", "claude")
    if out.code == 0:
        strict_json(path.read_bytes())  # raises on Infinity
    else:
        assert path.read_bytes() == original


@pytest.mark.parametrize(
    "token", ["3.14159265358979323846264338327950288", "1E2", "-0", "1e-400", "1.10"]
)
def test_json_numbers_round_trip_unchanged(cli: Cli, repo: Path, token: str) -> None:
    path = repo / ".mcp.json"
    path.write_text('{"x": ' + token + "}")
    assert cli("setup", "claude").code == 0
    written = path.read_text()
    assert re.search(r'"x":\s*' + re.escape(token) + r"\s*[,}]", written), written
    assert strict_json(written)["mcpServers"]["cortex"]["command"] == COMMAND


@pytest.mark.parametrize(
    "token", ["0.1", "-2", "123456789012345678901234567890", "1e+300", "2.5e-05", "0"]
)
def test_json_numbers_that_are_already_canonical_round_trip(
    cli: Cli, repo: Path, token: str
) -> None:
    path = repo / ".mcp.json"
    path.write_text('{"x": ' + token + ', "y": [' + token + "]}")
    assert cli("setup", "claude").code == 0
    written = path.read_text()
    document = json.loads(written, parse_float=Decimal, parse_int=Decimal)
    assert document["x"] == Decimal(token)
    assert document["y"] == [Decimal(token)]


@pytest.mark.parametrize(
    "content",
    [
        b'{"a": 1, "a": 2}',
        b'{"mcpServers": {"cortex": {"command": "x"}, "cortex": {"command": "y"}}}',
        b'{"deep": {"k": 1, "k": 1}}',
        b'\xef\xbb\xbf{"a": 1}',
        b'{"a": 1 // a comment\n}',
        b'{"a": 1 /* block */}',
        b'{"a": [1, 2,],}',
        b'{"a": 1,}',
        b"{'a': 1}",
        b'{"a": NaN}',
        b'{"a": -Infinity}',
        b'{"a": "\xff"}',
        b'{"a": 1}\n{"b": 2}',
        b'"just a string"',
        b"null",
        b'{"mcpServers": "cortex"}',
        b"\x00",
    ],
    ids=lambda c: repr(c[:24]),
)
def test_json_that_is_not_plain_json_is_refused_and_untouched(
    cli: Cli, repo: Path, content: bytes
) -> None:
    path = repo / ".mcp.json"
    path.write_bytes(content)
    before = path.stat()
    out = cli("setup", "claude")
    assert out.code == 4, out.stdout
    assert path.read_bytes() == content
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in repo.iterdir() if p.name.startswith((".mcp", ".tmp"))) == [
        ".mcp.json"
    ]
    # Both files are composed before either is written: the hooks file is not made either.
    assert not (repo / ".claude").exists()


def deep_json() -> bytes:
    return b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def deep_toml_array() -> bytes:
    return b"a = " + b"[" * 3000 + b"]" * 3000 + b"\n"


def deep_toml_inline() -> bytes:
    return b"a = " + b"{b = " * 3000 + b"1" + b"}" * 3000 + b"\n"


def huge_toml_int() -> bytes:
    return b"a = 1" + b"0" * 5000 + b"\n"


PATHOLOGICAL = [
    pytest.param("claude", deep_json, id="json-100000-deep"),
    pytest.param("codex", deep_toml_array, id="toml-3000-deep-array"),
    pytest.param("codex", deep_toml_inline, id="toml-3000-deep-inline-table"),
    pytest.param("codex", huge_toml_int, id="toml-5000-digit-integer"),
]


def pathological_target(env: dict[str, str], repo: Path, host: str) -> Path:
    return repo / ".mcp.json" if host == "claude" else codex_config(env)


@pytest.mark.parametrize(("host", "make"), PATHOLOGICAL)
def test_pathological_files_are_left_untouched(
    cli: Cli, env: dict[str, str], repo: Path, host: str, make: Any
) -> None:
    path = pathological_target(env, repo, host)
    content = make()
    path.write_bytes(content)
    out = cli("setup", host)
    assert out.code != 0
    assert out.envelope["ok"] is False
    assert path.read_bytes() == content
    assert stray_temps(path.parent) == []
    assert not path.with_name(path.name + ".cortex-backup").exists()
    assert not hooks_path(env, repo, host).exists()


@pytest.mark.parametrize(("host", "make"), PATHOLOGICAL)
def test_pathological_files_are_refused_as_bad_input(
    cli: Cli, env: dict[str, str], repo: Path, host: str, make: Any
) -> None:
    path = pathological_target(env, repo, host)
    path.write_bytes(make())
    out = cli("setup", host)
    assert out.code == 4, out.stdout[:300]
    assert out.error_code == "invalid_input"


def test_json_entry_keys_set_by_hand_are_kept(cli: Cli, repo: Path) -> None:
    path = repo / ".mcp.json"
    old = {"type": "stdio", "command": "/old/python", "args": ["-m", "cortex", "serve"],
           "env": {"A": "1"}, "timeout": 30000, "cwd": "/srv/app"}  # fmt: skip
    path.write_text(json.dumps({"mcpServers": {"cortex": old}}))
    assert cli("setup", "claude").code == 0
    entry = json.loads(path.read_text())["mcpServers"]["cortex"]
    assert entry["command"] == COMMAND
    assert entry["args"] == ARGS
    assert entry["env"] == {"A": "1"}
    assert entry.get("timeout") == 30000
    assert entry.get("cwd") == "/srv/app"


# ---------------------------------------------------------------------------------------------
# `cortex setup`: hostile TOML.
# ---------------------------------------------------------------------------------------------


def without_ours(document: dict[str, Any]) -> dict[str, Any]:
    """The document with `mcp_servers.cortex` (and an emptied `mcp_servers`) removed."""
    copy = json.loads(json.dumps(document, default=str))
    servers = copy.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop("cortex", None)
        if not servers:
            copy.pop("mcp_servers")
    return copy  # type: ignore[no-any-return]


EDITABLE_TOML = [
    ("comment-holding-the-header", '# [mcp_servers.cortex]\nmodel = "o3"\n', True),
    ("trailing-comment-header", "a = 1 # [mcp_servers.cortex]\n", True),
    ("spaced-quoted-header",
     '[ mcp_servers . "cortex" ]  # hand\ncommand = "/old"\nargs = []\n', False),
    ("literal-quoted-header", "[mcp_servers.'cortex']\ncommand = '''/old'''\n", False),
    ("tab-after-header", '[mcp_servers.cortex]\t\ncommand = "/old"\n', False),
    ("crlf",
     'model = "o3"\r\n[mcp_servers.cortex]\r\ncommand = "/old"\r\n\r\n[tui]\r\nx = 1\r\n', False),
    ("crlf-append", 'model = "o3"\r\n[tui]\r\nx = 1', True),
    ("no-final-newline-append", 'model = "o3"', True),
    ("no-final-newline-ours", 'm = 1\n[mcp_servers.cortex]\ncommand = "/old"', False),
    ("only-comments", "# nothing here\n# really\n", True),
    ("empty", "", True),
    ("blank-lines", "\n\n\n", True),
    ("tables-after-ours",
     ('[mcp_servers.cortex]\ncommand = "/old"\nargs = []\nstartup_timeout_sec = 9\n'
      '[mcp_servers.other]\ncommand = "y"\n[[profiles]]\nname = "a"\n[[profiles]]\nname = "b"\n'
      '[z]\na = 1\n'), False),
    ("subtable-after-ours",
     '[mcp_servers.cortex]\ncommand = "/old"\n\n# env\n[mcp_servers.cortex.env]\nA = "1"\n', False),
    ("subtable-only", '[mcp_servers.cortex.env]\nA = "1"\n', True),
    ("multiline-array-in-ours",
     '[mcp_servers.cortex]\nargs = [\n  "-m", # why\n  "old",\n]\ncommand = "/old"\n', False),
    ("multiline-string-before-ours",
     'x = """\n[z]\n[mcp_servers.other]\n"""\n[mcp_servers.cortex]\ncommand = "/old"\n', False),
    ("literal-multiline-not-a-header-line",
     "s = '''\n[mcp_servers.cortex]'''\n[mcp_servers.cortex]\ncommand = '/old'\n", False),
    ("dotted-keys-define-a-sibling", 'mcp_servers.other.command = "x"\n', True),
    ("sibling-inline-table", '[mcp_servers]\nother = { command = "x", args = [] }\n', True),
    ("empty-mcp-servers", "[mcp_servers]\n", True),
    ("unicode-everywhere",
     '"kéy 漢" = "\U0001f600"\n[mcp_servers.cortex]\ncommand = "/old"\n"ü" = "\u2028\x85"\n',
     False),
    ("values-of-every-type-kept",
     ('[mcp_servers.cortex]\ncommand = "/old"\nwhen = 1979-05-27T07:32:00-07:00\n'
      "day = 1979-05-27\nat = 07:32:00\nlocal = 1979-05-27T07:32:00\nf = 1e300\ni = -inf\n"
      'hex = 0xff\nnested = { a = [1, { b = "c" }], "we ird" = true }\n'), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "appended"),
    [pytest.param(content, appended, id=name) for name, content, appended in EDITABLE_TOML],
)
def test_toml_syntax_tricks_are_edited_safely_and_idempotently(
    cli: Cli, env: dict[str, str], content: str, appended: bool
) -> None:
    path = codex_config(env)
    original = content.encode()
    path.write_bytes(original)
    out = cli("setup", "codex")
    assert out.code == 0, out.stdout
    written = path.read_bytes()
    new = tomllib.loads(written.decode())
    old = tomllib.loads(content)
    # Our table holds the entry (and every key a person put there); nothing else changed.
    entry = new["mcp_servers"]["cortex"]
    assert entry["command"] == COMMAND
    assert entry["args"] == ARGS
    old_entry = (old.get("mcp_servers") or {}).get("cortex") or {}
    for key, value in old_entry.items():
        if key not in {"command", "args"}:
            assert entry[key] == value, key
    assert without_ours(new) == without_ours(old)
    if appended:
        assert written.startswith(original)
    if b"\r\n" in original:
        assert b"\n" not in written.replace(b"\r\n", b"")
    # Every file here existed (if empty): its first change keeps it.
    assert path.with_name("config.toml.cortex-backup").read_bytes() == original
    assert stray_temps(path.parent) == []
    # Idempotent: a second run changes no byte of either file, and writes nothing at all.
    hooks = codex_hooks(env)
    hooks_written = hooks.read_bytes()
    state, hooks_state = path.stat(), hooks.stat()
    again = cli("setup", "codex")
    assert again.data["changed"] is False
    assert again.data["hooks"]["changed"] is False
    assert again.data["changes"] == []
    assert path.read_bytes() == written
    assert path.stat().st_mtime_ns == state.st_mtime_ns
    assert path.stat().st_ino == state.st_ino
    assert hooks.read_bytes() == hooks_written
    assert (hooks.stat().st_mtime_ns, hooks.stat().st_ino) == (
        hooks_state.st_mtime_ns,
        hooks_state.st_ino,
    )
    assert sorted(os.listdir(path.parent)) == [
        "config.toml",
        "config.toml.cortex-backup",
        "hooks.json",
    ]


REFUSED_TOML = [
    ("bom", '\ufeffmodel = "o3"\n'),
    ("array-of-tables-parent", '[[mcp_servers]]\nname = "x"\n'),
    ("array-of-tables-ours", '[[mcp_servers.cortex]]\ncommand = "x"\n'),
    ("dotted-ours-at-root", 'mcp_servers.cortex.command = "/old"\n'),
    ("dotted-ours-in-parent", '[mcp_servers]\ncortex.command = "/old"\n'),
    ("inline-ours", '[mcp_servers]\ncortex = { command = "/old" }\n'),
    ("ours-twice", '[mcp_servers.cortex]\ncommand = "/a"\n[ mcp_servers . cortex ]\nargs = []\n'),
    ("header-in-multiline-string-inside-ours",
     '[mcp_servers.cortex]\ncommand = "/old"\ndesc = """\n[other]\n"""\n'),
    ("redefined-by-dotted-key",
     '[mcp_servers.cortex]\ncommand = "/old"\n[mcp_servers]\ncortex.args = []\n'),
    ("not-toml", "model = \n"),
    ("parent-not-a-table", "mcp_servers = 3\n"),
    ("ours-not-a-table", '[mcp_servers]\ncortex = "x"\n'),
    ("form-feed", "a = 1\n\x0c\n"),
    ("nul", "a = 1\x00\n"),
]  # fmt: skip


@pytest.mark.parametrize("content", [pytest.param(c, id=n) for n, c in REFUSED_TOML])
def test_toml_that_cannot_be_edited_safely_is_refused_and_untouched(
    cli: Cli, env: dict[str, str], content: str
) -> None:
    path = codex_config(env)
    path.write_bytes(content.encode())
    before = path.stat()
    out = cli("setup", "codex")
    assert out.code in {4, 5}, out.stdout
    assert path.read_bytes() == content.encode()
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(os.listdir(path.parent)) == ["config.toml"]
    assert cli("setup", "codex", "--dry-run").code == out.code


@pytest.mark.parametrize(
    "content",
    [
        'x = """\n[mcp_servers.cortex]\ncommand = "evil"\n"""\n',
        "x = '''\n[mcp_servers.cortex]\n'''\n",
        "[profiles.p]\ntemperature = nan\n",
        '[mcp_servers.other]\ncommand = "x"\nweights = [1.0, nan]\n',
    ],
    ids=["basic-multiline", "literal-multiline", "nan-elsewhere", "nan-in-array"],
)
def test_toml_that_is_safe_to_edit_is_not_refused(
    cli: Cli, env: dict[str, str], content: str
) -> None:
    path = codex_config(env)
    path.write_text(content)
    out = cli("setup", "codex")
    assert out.code == 0, out.stdout
    written = path.read_text()
    assert written.startswith(content)
    assert tomllib.loads(written)["mcp_servers"]["cortex"]["command"] == COMMAND


def test_a_large_toml_file_is_edited_in_place(cli: Cli, env: dict[str, str]) -> None:
    path = codex_config(env)
    head = "".join(f'[profiles.p{i}]\nmodel = "o3"\nnote = "{"x" * 40}"\n' for i in range(4000))
    ours = '[mcp_servers.cortex]\ncommand = "/old"\nargs = []\n'
    tail = "".join(f"[tail.t{i}]\nv = {i}\n" for i in range(4000))
    path.write_text(head + ours + tail)
    assert cli("setup", "codex").code == 0
    written = path.read_text()
    assert written.startswith(head)
    assert written.endswith(tail)
    assert tomllib.loads(written)["mcp_servers"]["cortex"]["command"] == COMMAND


# ---------------------------------------------------------------------------------------------
# `cortex setup`: what stands at the path, and the environment.
# ---------------------------------------------------------------------------------------------


@pytest.mark.process
def test_a_directory_fifo_or_device_at_the_path_is_refused_without_blocking(
    env: dict[str, str], repo: Path
) -> None:
    path = repo / ".mcp.json"
    makers: list[tuple[str, Any]] = [
        ("directory", path.mkdir),
        ("fifo", lambda: os.mkfifo(path)),
        ("symlink-to-device", lambda: path.symlink_to("/dev/zero")),
    ]
    if os.geteuid() == 0:
        makers.append(("device", lambda: os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))))
    for label, make in makers:
        make()
        done = subprocess.run(
            [sys.executable, "-m", "cortex", "setup", "claude", "--json"],
            cwd=repo,
            env=env,
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert done.returncode in {4, 5}, (label, done.stdout)
        envelope = json.loads(done.stdout)
        assert envelope["ok"] is False
        # Refused for what stands at the path (not, say, for the program form).
        assert str(path) in envelope["error"]["message"], (label, envelope)
        assert sorted(p.name for p in repo.iterdir() if p.name.startswith((".mcp", ".tmp"))) == [
            ".mcp.json"
        ], label
        assert not (repo / ".claude").exists(), label
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()


def without_dac(argv: list[str]) -> list[str]:
    """As root, drop the capabilities that bypass file permissions (so chmod means something)."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *argv]


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None,
    reason="root without setpriv cannot be denied by permissions",
)
@pytest.mark.parametrize("where", ["codex-dir", "repo", "home", "unreadable-file"])
def test_an_unwritable_place_fails_cleanly(env: dict[str, str], repo: Path, where: str) -> None:
    if where == "codex-dir":
        path = codex_config(env)
        path.write_text("a = 1\n")
        locked, host = path.parent, "codex"
    elif where == "repo":
        path, locked, host = repo / ".mcp.json", repo, "claude"
    elif where == "home":
        path = Path(env["HOME"]) / ".codex" / "config.toml"
        locked, host = Path(env["HOME"]), "codex"
    else:
        path = repo / ".mcp.json"
        path.write_text("{}")
        locked, host = path, "claude"
    before = path.read_bytes() if path.exists() else None
    hooks = hooks_path(env, repo, host)
    assert not hooks.exists()
    mode = locked.stat().st_mode
    locked.chmod(0o000 if where == "unreadable-file" else 0o500)
    try:
        done = subprocess.run(
            without_dac([sys.executable, "-m", "cortex", "setup", host, "--json"]),
            cwd=repo,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        locked.chmod(stat.S_IMODE(mode))
    envelope = json.loads(done.stdout)
    assert done.returncode != 0
    assert envelope["ok"] is False
    assert "Traceback" not in done.stderr.decode()
    assert (path.read_bytes() if path.exists() else None) == before
    if path.parent.exists():
        assert stray_temps(path.parent) == []
        assert not path.with_name(path.name + ".cortex-backup").exists()
    assert not hooks.exists()  # the server entry is written first: its failure stops there


@pytest.mark.parametrize(
    ("host", "variable", "value"),
    [
        ("codex", "HOME", None),
        ("codex", "HOME", ""),
        ("codex", "HOME", "relative/home"),
        ("codex", "HOME", "~"),
        ("claude", "HOME", None),
        ("claude", "HOME", "./home"),
        ("codex", "CODEX_HOME", "relative"),
        ("codex", "CODEX_HOME", "~/.codex"),
    ],
)
def test_an_unusable_home_is_refused_and_writes_nothing(
    env: dict[str, str], repo: Path, host: str, variable: str, value: str | None
) -> None:
    env = dict(env)
    if value is None:
        env.pop(variable, None)
    else:
        env[variable] = value
    before = sorted(str(p) for p in repo.parent.rglob("*") if ".git" not in p.parts)
    out = Cli(env, repo)("setup", host, "--scope", "user")
    assert out.code == 4, out.stdout
    assert variable in out.envelope["error"]["message"]
    assert sorted(str(p) for p in repo.parent.rglob("*") if ".git" not in p.parts) == before


def test_a_planted_backup_link_is_never_written_through(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    links = []
    for name, path in (("victim", repo / ".mcp.json"), ("hooks-victim", settings)):
        path.write_text('{"theirs": 1}')
        link = path.with_name(path.name + ".cortex-backup")
        link.symlink_to(tmp_path / name)
        links.append(link)
    out = cli("setup", "claude")
    assert out.code == 0
    assert (out.data["changed"], out.data["hooks"]["changed"]) == (True, True)
    assert not (tmp_path / "victim").exists()
    assert not (tmp_path / "hooks-victim").exists()
    assert [link.is_symlink() for link in links] == [True, True]


# ---------------------------------------------------------------------------------------------
# `cortex setup`: concurrency and crashes.
# ---------------------------------------------------------------------------------------------


def test_a_backup_made_by_a_concurrent_run_does_not_fail_this_one(
    cli: Cli, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = codex_config(env)
    path.write_text('model = "o3"\n')
    hooks = codex_hooks(env)
    hooks.write_text('{"theirs": 1}')
    real = writing.write_backup
    calls: list[str] = []

    def other_run_wins(backup: str, data: bytes, mode: int) -> None:
        # The other process passed the same "no backup yet" check a moment earlier.
        calls.append(os.path.basename(backup))
        real(backup, data, mode)
        real(backup, data, mode)

    monkeypatch.setattr(writing, "write_backup", other_run_wins)
    out = cli("setup", "codex")
    assert out.code in {0, 6}, out.stdout
    assert calls == ["config.toml.cortex-backup", "hooks.json.cortex-backup"]
    assert tomllib.loads(path.read_text())["mcp_servers"]["cortex"]["command"] == COMMAND
    assert strict_json(hooks.read_bytes())["theirs"] == 1
    assert hook_commands(hooks) == our_hooks("codex")
    assert path.with_name("config.toml.cortex-backup").read_text() == 'model = "o3"\n'
    assert hooks.with_name("hooks.json.cortex-backup").read_text() == '{"theirs": 1}'


SYNCED_SETUP = """
import io, os, sys, time
from cortex.main import main
# Imported before the start, so the runs meet at their writes.
import cortex.kernel.host.setup, cortex.kernel.host.toml_edit, tomllib
import cortex.kernel.host.hook_files, cortex.kernel.host.program, cortex.kernel.host.writing
start = float(sys.argv[1])
while time.time() < start:
    pass
out = io.StringIO()
code = main(sys.argv[2:] + ["--json"], stdout=out, stderr=io.StringIO())
sys.stdout.write(out.getvalue())
sys.exit(code)
"""


@pytest.mark.slow
@pytest.mark.parametrize("host", ["claude", "codex"])
def test_concurrent_setup_processes_leave_one_valid_file(
    env: dict[str, str], repo: Path, host: str
) -> None:
    """Four processes released at the same instant, 15 rounds: never a torn or lost file, the
    server's or the hooks file (made new each round, with its directory for Claude Code)."""
    path = repo / ".mcp.json" if host == "claude" else codex_config(env)
    hooks = hooks_path(env, repo, host)
    original = b'{"keep": [1, 2, 3]}' if host == "claude" else b"keep = [1, 2, 3]\n"
    statuses: list[int] = []
    for _ in range(15):
        for leftover in path.parent.iterdir():
            if leftover.name.startswith((path.name, hooks.name, ".tmp-")):
                leftover.unlink()
        if host == "claude" and hooks.parent.exists():
            for leftover in hooks.parent.iterdir():
                leftover.unlink()
            hooks.parent.rmdir()
        path.write_bytes(original)
        start = time.time() + 1.0
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", SYNCED_SETUP, str(start), "setup", host],
                cwd=repo,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(4)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            statuses.append(proc.returncode)
            assert proc.returncode in {0, 1}, err.decode()
            if proc.returncode:
                assert json.loads(out)["error"]["code"] == "internal_error"
        written = path.read_bytes()
        if host == "claude":
            document = strict_json(written)
            assert document["keep"] == [1, 2, 3]
            assert document["mcpServers"]["cortex"]["command"] == COMMAND
        else:
            document = tomllib.loads(written.decode())
            assert document["keep"] == [1, 2, 3]
            assert document["mcp_servers"]["cortex"]["command"] == COMMAND
        assert path.with_name(path.name + ".cortex-backup").read_bytes() == original
        assert stray_temps(path.parent) == []
        # One hook set, once: no run added its own beside another's.
        assert hook_commands(hooks) == our_hooks(host)
        assert not hooks.with_name(hooks.name + ".cortex-backup").exists()  # it was new
        assert stray_temps(hooks.parent) == []
    assert 0 in statuses


CRASH_AT_RENAME = """
import os, signal, sys
victim = sys.argv.pop(1)  # the name of the file whose rename the process dies at
real = os.replace
def crash(source, destination, *args, **kwargs):
    if os.path.basename(destination) != victim:
        return real(source, destination, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = crash
from cortex.main import entrypoint
sys.exit(entrypoint())
"""


def crash_setup(script: str, victim: str, env: dict[str, str], repo: Path, host: str) -> None:
    """Run `cortex setup HOST` in a real process that `script` kills at `victim`'s write."""
    crashed = subprocess.run(
        [sys.executable, "-c", script, victim, "setup", host, "--json"],
        cwd=repo,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr.decode()


def two_files(env: dict[str, str], repo: Path, host: str) -> tuple[Path, Path]:
    """The server's file and the hooks file, each holding something of the user's already."""
    path = repo / ".mcp.json" if host == "claude" else codex_config(env)
    path.write_bytes(b'{"keep": true}' if host == "claude" else b"keep = true\n")
    hooks = hooks_path(env, repo, host)
    hooks.parent.mkdir(exist_ok=True)
    hooks.write_bytes(b'{"theirs": true}')
    return path, hooks


def backup_of(path: Path) -> Path:
    return path.with_name(path.name + ".cortex-backup")


@pytest.mark.process
@pytest.mark.parametrize("host", ["claude", "codex"])
@pytest.mark.parametrize("crashed_at", ["server", "hooks"])
def test_a_crash_at_the_rename_keeps_the_old_file(
    env: dict[str, str], repo: Path, host: str, crashed_at: str
) -> None:
    path, hooks = two_files(env, repo, host)
    original, hooks_original = path.read_bytes(), hooks.read_bytes()
    victim = path if crashed_at == "server" else hooks
    crash_setup(CRASH_AT_RENAME, victim.name, env, repo, host)
    assert hooks.read_bytes() == hooks_original  # the hooks file is written last, if at all
    if crashed_at == "server":
        assert path.read_bytes() == original
        assert backup_of(path).read_bytes() == original
        assert not backup_of(hooks).exists()  # never reached
    else:
        # The server's file was replaced whole before the hooks file's turn.
        assert path.read_bytes() != original
        assert backup_of(path).read_bytes() == original
        assert backup_of(hooks).read_bytes() == hooks_original
    again = Cli(env, repo)("setup", host)
    assert again.data["changed"] is (crashed_at == "server")
    assert again.data["hooks"]["changed"] is True
    assert again.data["backup"] is None  # the first backup is the one kept
    expected = None if crashed_at == "hooks" else str(backup_of(hooks))
    assert again.data["hooks"]["backup"] == expected
    assert backup_of(path).read_bytes() == original
    assert backup_of(hooks).read_bytes() == hooks_original
    assert strict_json(hooks.read_bytes())["theirs"] is True
    assert hook_commands(hooks) == our_hooks(host)


@pytest.mark.process
@pytest.mark.parametrize("host", ["claude", "codex"])
@pytest.mark.parametrize("crashed_at", ["server", "hooks"])
def test_a_crash_leaves_no_temp_file_behind_after_the_next_run(
    env: dict[str, str], repo: Path, host: str, crashed_at: str
) -> None:
    path, hooks = two_files(env, repo, host)
    victim = path if crashed_at == "server" else hooks
    crash_setup(CRASH_AT_RENAME, victim.name, env, repo, host)
    assert stray_temps(victim.parent) != []  # the killed run's temp file, a full copy
    assert Cli(env, repo)("setup", host).code == 0
    assert stray_temps(path.parent) == []
    assert stray_temps(hooks.parent) == []


CRASH_MID_BACKUP = """
import os, signal, sys
import cortex.cases.fsio as fsio
victim = sys.argv.pop(1)  # the backup whose write is torn
real = fsio.write_all
def torn(fd, data):
    name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    if not name.startswith(fsio.TEMP_PREFIX + victim + "-"):
        return real(fd, data)
    os.write(fd, data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)
fsio.write_all = torn
from cortex.main import entrypoint
sys.exit(entrypoint())
"""


@pytest.mark.process
@pytest.mark.parametrize("host", ["claude", "codex"])
@pytest.mark.parametrize("torn", ["server", "hooks"])
def test_a_crash_while_backing_up_never_leaves_a_torn_backup_as_the_only_copy(
    env: dict[str, str], repo: Path, host: str, torn: str
) -> None:
    path, hooks = two_files(env, repo, host)
    if host == "claude":
        original = b'{"keep": "' + b"x" * 4000 + b'"}'
    else:
        original = "".join(f"k{i} = {i}\n" for i in range(800)).encode()
    hooks_original = b'{"theirs": "' + b"y" * 4000 + b'"}'
    path.write_bytes(original)
    hooks.write_bytes(hooks_original)
    victim = path if torn == "server" else hooks
    crash_setup(CRASH_MID_BACKUP, backup_of(victim).name, env, repo, host)
    # The crash itself lost nothing (the server's file is written first, the hooks file last).
    assert hooks.read_bytes() == hooks_original
    assert (path.read_bytes() == original) is (torn == "server")
    out = Cli(env, repo)("setup", host)
    assert out.code == 0
    assert path.read_bytes() != original
    assert hooks.read_bytes() != hooks_original
    # Each original now survives only as its backup: it must be whole.
    assert backup_of(path).read_bytes() == original
    assert backup_of(hooks).read_bytes() == hooks_original
    assert stray_temps(path.parent) == []
    assert stray_temps(hooks.parent) == []


@pytest.mark.slow
@pytest.mark.parametrize("host", ["claude", "codex"])
def test_sigkill_at_random_moments_leaves_the_old_or_the_new_file(
    env: dict[str, str], repo: Path, host: str
) -> None:
    """50 real `setup` processes killed at random points of their run (a big file makes the
    write itself a sizeable part of it): the file always parses and is wholly old or new, and
    the hooks file, written after it, is absent or whole."""
    import random

    path = repo / ".mcp.json" if host == "claude" else codex_config(env)
    hooks = hooks_path(env, repo, host)
    if host == "claude":
        big = {"projects": {f"/p/{i}": {"history": ["x" * 200] * 5} for i in range(6000)}}
        original = json.dumps(big).encode()
    else:
        original = "".join(f'[p.t{i}]\nv = "{"x" * 200}"\n' for i in range(6000)).encode()
    argv = [sys.executable, "-m", "cortex", "setup", host, "--json"]

    def reset() -> None:
        for directory in {path.parent, hooks.parent}:
            for leftover in directory.iterdir() if directory.exists() else []:
                if leftover.name.startswith((path.name, hooks.name, ".tmp-")):
                    leftover.unlink()
        path.write_bytes(original)

    reset()
    started = time.monotonic()
    subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=True, timeout=60)
    full = time.monotonic() - started
    new = path.read_bytes()
    new_hooks = hooks.read_bytes()
    assert new != original
    assert hook_commands(hooks) == our_hooks(host)
    outcomes: dict[str, int] = {"old": 0, "new": 0}
    rng = random.Random(1234)
    for _ in range(50):
        reset()
        proc = subprocess.Popen(
            argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.3 * full, 1.1 * full))
        proc.kill()
        proc.wait()
        current = path.read_bytes()
        assert current in {original, new}
        outcomes["old" if current == original else "new"] += 1
        if host == "claude":
            strict_json(current)
        else:
            tomllib.loads(current.decode())
        # A new file implies a whole backup (a torn one is tested above).
        if current == new:
            assert path.with_name(path.name + ".cortex-backup").read_bytes() == original
        if hooks.exists():
            assert current == new  # the server's file is written first
            assert hooks.read_bytes() == new_hooks
    assert outcomes["old"], outcomes
    assert outcomes["new"], outcomes


@pytest.mark.process
def test_a_git_the_server_runs_never_reads_the_request_stream(
    served: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """Under `cortex serve` stdin is the MCP stream: a git that inherited it could take a request.

    The `git` first on PATH reads a line of its input before running the real git; opening a
    case runs it (`git_head`). The next request, sent while that git waits, must be answered.
    """
    real = shutil.which("git", path=served["PATH"])
    assert real is not None
    stolen = tmp_path / "stolen.txt"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\nif IFS= read -r line; then printf "%s\\n" "$line" >> {stolen}; fi\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**served, "PATH": f"{wrapper.parent}{os.pathsep}{served['PATH']}"}
    with raw_server(repo, env, tmp_path) as s:
        opening = s.start_call("cortex_open_task", {"goal": "Fix the login redirect"})
        time.sleep(1.0)  # the open's git is running (and would be waiting on its input)
        listing = s.request("tools/list", {})
        opened = s.wait_for(opening, 60)
        assert opened is not None, stderr_text(tmp_path)
        assert s.wait_for(listing, 30) is not None, "a request was lost"
        assert s.finish() == 0
    assert not stolen.exists(), stolen.read_text()
    # A git left waiting on its input is killed at its deadline: the case then knows no commit.
    envelope, _ = envelope_of(opened)
    workspace = envelope["data"]["workspace"]
    assert (workspace["branch"], envelope["data"]["warnings"]) == ("main", []), workspace
    assert workspace["commitBefore"], workspace
