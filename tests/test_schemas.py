"""Issue 12, schemas a client can use: every answer validates against its published schema.

docs/schema/<command>.json constrains `data` with the command's own answer type; a scripted
case through the CLI checks every envelope against its file with jsonschema, an independent
validator. (tests/test_mcp.py does the same over MCP against each tool's `outputSchema`.)
Input schemas publish plain types with defaults, and a string where an integer belongs is
refused the same clear way by every tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, configure_verifiers

from cortex.kernel.errors import InvalidInputError
from cortex.mcp.schemas import input_schema
from cortex.mcp.tools import TOOLS, decode_args

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schema"


def check(envelope: dict[str, Any]) -> None:
    import jsonschema

    schema = json.loads((SCHEMAS / f"{envelope['command']}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(envelope)


def test_every_answer_of_a_scripted_case_validates_against_its_schema(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    configure_verifiers(repo, env, {"unit": ["true"]})
    cli.env["CORTEX_APPROVE_COMMANDS"] = "1"
    seen: set[str] = set()

    def run(*argv: str, ok: bool = True) -> dict[str, Any]:
        out = cli(*argv)
        envelope = out.envelope
        assert envelope["ok"] is ok, (argv, envelope["error"])
        check(envelope)
        seen.add(envelope["command"])
        return envelope

    task = run("case", "open", "Fix it", "--criterion", "c1=it works")["data"]["taskId"]
    run("case", "status", task)
    (repo / "raw").mkdir()
    (repo / "raw" / "a.txt").write_text("hello\n")
    evidence = run("case", "evidence", "add", task, "--claim", "x", "--raw-dir", "raw")["data"]
    tree = evidence["evidence"]["rawRef"]
    ev = evidence["evidence"]["id"]
    run("case", "read-artifact", task, tree)
    run("case", "read-artifact", task, tree, "--path", "a.txt")
    run("case", "read-evidence", task, ev)
    run("case", "note", task, "a note")
    run("case", "begin-change", task, "--actor", "a", ok=False)
    plan = run(
        "case", "plan", task, "--hypothesis", "a :: b", "--support", f"1={ev}",
        "--uncertainty", "u", "--file", "app.py", "--boundary-reason", "r",
        "--verify", "command:unit",
    )["data"]  # fmt: skip
    run("case", "resolve", task, plan["hypotheses"][0]["id"], "--status", "challenged",
        "--reason", "r")  # fmt: skip
    run("case", "begin-change", task, "--actor", "a")
    run("case", "lease", "renew", task, "--actor", "a")
    (repo / "app.py").write_text("print('fixed')\n")
    run("case", "verify", task, "--actor", "a")
    run("case", "complete", task, "--outcome", "o", ok=False)  # the criterion is unproven
    run("case", "verify", task, "--actor", "a", "--claim", "c1=it works", "--contract",
        "c1=command:unit")  # fmt: skip
    run("case", "timeline", task)
    run("case", "timeline", task, "--anchor", ev, "--before", "1")
    run("case", "handoff", task)
    run("case", "list")
    decision = run("case", "decision", "request", task, "--question", "q?", "--option", "a=A|x",
                   "--option", "b=B")["data"]["decision"]["id"]  # fmt: skip
    run("case", "decision", "list", task)
    run("case", "status", task)
    run("case", "decision", "answer", task, decision, "--answer", "a", "--responder", "alice")
    run("case", "lease", "release", task, "--actor", "a")
    run("case", "begin-change", task, "--actor", "a")
    run("case", "verify", task, "--actor", "a", "--claim", "c1=it works", "--contract",
        "c1=command:unit")  # fmt: skip
    run("case", "complete", task, "--outcome", "done", "--actor", "a")
    recalled = run("recall", "fix")["data"]
    assert recalled["cards"], "the completed case's outcome is a card"
    run("recall", "get", recalled["cards"][0]["id"])
    run("case", "status", "task_01J00000000000000000000000", ok=False)
    other = run("case", "open", "another")["data"]["taskId"]
    run("case", "block", other, "--reason", "waiting")
    third = run("case", "open", "a third")["data"]["taskId"]
    run("case", "abort", third, "--reason", "duplicate")
    typed = {
        "case.open", "case.status", "case.list", "case.evidence.add", "case.note",
        "case.read-evidence", "case.plan", "case.resolve", "case.begin-change",
        "case.lease.renew", "case.lease.release", "case.verify", "case.decision.request",
        "case.decision.answer", "case.complete", "case.block", "case.abort",
        "case.read-artifact", "case.timeline", "case.handoff", "recall", "recall.get",
    }  # fmt: skip
    assert typed <= seen


def test_a_key_an_answer_type_does_not_know_fails_validation() -> None:
    """A test of the test: answers forbid unknown fields, so drift cannot pass unseen."""
    import jsonschema

    schema = json.loads((SCHEMAS / "case.block.json").read_text())
    envelope = {
        "schema": "cortex/v1",
        "ok": True,
        "command": "case.block",
        "data": {
            "taskId": "t",
            "revision": 1,
            "status": "blocked",
            "reason": "r",
            "withdrawnDecision": None,
            "extra": 1,
        },
        "error": None,
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(envelope, schema)
    del envelope["data"]["extra"]  # type: ignore[attr-defined]
    jsonschema.validate(envelope, schema)


def test_the_envelope_names_its_version(cli: Cli, task: str) -> None:
    schema = json.loads((SCHEMAS / "case.status.json").read_text())
    assert schema["properties"]["schema"] == {
        "const": "cortex/v1",
        "description": "the version of the contract",
    }
    assert schema["$id"] == "cortex/v1/case.status"
    assert cli("case", "status", task).envelope["schema"] == "cortex/v1"


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_input_schemas_publish_plain_types(tool: Any) -> None:
    """No `anyOf` with null: the Inspector (and others) build inputs from the top-level type."""
    schema = input_schema(tool)
    for node in _walk(schema):
        for option in node.get("anyOf", []):
            assert option != {"type": "null"}, (tool.name, node)
    for name, prop in schema["properties"].items():
        assert "type" in prop or "$ref" in prop or "enum" in prop, (tool.name, name, prop)
        assert prop.get("default", 0) is not None, (tool.name, name)


INTEGERS = [
    (tool, name)
    for tool in TOOLS
    for name, prop in input_schema(tool)["properties"].items()
    if prop.get("type") == "integer"
]


@pytest.mark.parametrize(("tool", "name"), INTEGERS, ids=[f"{t.name}.{n}" for t, n in INTEGERS])
def test_an_integer_as_a_string_is_refused_the_same_way_everywhere(tool: Any, name: str) -> None:
    schema = input_schema(tool)
    props = schema["properties"]
    arguments: dict[str, Any] = {
        field: props[field]["enum"][0] if "enum" in props[field] else "x"
        for field in schema.get("required", [])
    }
    arguments[name] = "200"
    with pytest.raises(InvalidInputError) as raised:
        decode_args(tool, arguments)
    assert raised.value.message == f"{tool.name}: {name} must be an integer, not a string"


def test_integers_in_the_read_artifact_schema_have_their_defaults() -> None:
    schema = next(input_schema(t) for t in TOOLS if t.name == "cortex_read_artifact")
    assert schema["properties"]["max_bytes"] == {
        "type": "integer",
        "default": 32768,
        "description": "at most 131072",
    }
