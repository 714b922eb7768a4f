"""`cortex serve` answers every request that carries an id (issue 27; docs/design/mcp.md).

A client waits on the id it sent. A request the server cannot take (no method, a method that is
not text, `jsonrpc` other than "2.0", parameters that are not an object, a batch, bytes that are
not UTF-8 before the JSON) still gets a JSON-RPC error answer naming that id, with the code the
JSON-RPC 2.0 specification gives, and the server goes on serving. Spoken to as a real process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_kit import RawServer, envelope_of, raw_server

pytestmark = pytest.mark.process  # its tests start cortex processes

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


def line(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


CASES = [
    pytest.param(lambda i: line(jsonrpc="2.0", id=i), INVALID_REQUEST, id="no-method"),
    pytest.param(lambda i: line(jsonrpc="2.0", id=i, method=7), INVALID_REQUEST, id="method-7"),
    pytest.param(
        lambda i: line(jsonrpc="2.0", id=i, method=None), INVALID_REQUEST, id="method-null"
    ),
    pytest.param(
        lambda i: line(jsonrpc="1.0", id=i, method="ping"), INVALID_REQUEST, id="jsonrpc-1.0"
    ),
    pytest.param(lambda i: line(id=i, method="ping"), INVALID_REQUEST, id="no-jsonrpc"),
    pytest.param(
        lambda i: line(jsonrpc="2.0", id=i, method="tools/list", params=[1, 2]),
        INVALID_PARAMS,
        id="array-params",
    ),
    pytest.param(
        lambda i: line(jsonrpc="2.0", id=i, method="tools/call", params=["cortex_status"]),
        INVALID_PARAMS,
        id="array-params-of-a-call",
    ),
    pytest.param(
        lambda i: line(jsonrpc="2.0", id=i, method="tools/list", params="x"),
        INVALID_PARAMS,
        id="string-params",
    ),
    pytest.param(
        lambda i: line(jsonrpc="2.0", id=i, method="no/such/method"),
        METHOD_NOT_FOUND,
        id="unknown-method",
    ),
    pytest.param(
        lambda i: b"\xff\xfe" + line(jsonrpc="2.0", id=i, method="ping"),
        PARSE_ERROR,
        id="non-utf8-prefix",
    ),
    pytest.param(
        lambda i: b'{"jsonrpc":"2.0","id":' + str(i).encode() + b',"method":"ping",',
        PARSE_ERROR,
        id="truncated-json",
    ),
]


@pytest.mark.parametrize(("make", "code"), CASES)
def test_a_bad_request_with_an_id_gets_the_spec_error(
    env: dict[str, str], repo: Path, tmp_path: Path, make: Any, code: int
) -> None:
    with raw_server(repo, env, tmp_path) as server:
        ident = server.new_id()
        server.send(make(ident))
        reply = server.wait_for(ident, 10)
        assert reply is not None, "the request got no answer"
        assert reply.get("jsonrpc") == "2.0"
        assert "error" in reply, reply
        assert reply["error"]["code"] == code, reply
        still_serving(server)


def still_serving(server: RawServer) -> None:
    reply = server.call("cortex_status", {"task_id": "task_01J00000000000000000000000"})
    envelope, status = envelope_of(reply)
    assert status == 3, envelope


def test_each_request_of_a_batch_gets_an_answer(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, env, tmp_path) as server:
        first, second = server.new_id(), server.new_id()
        batch = [
            {"jsonrpc": "2.0", "id": first, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": second, "method": "tools/list"},
        ]
        server.send(json.dumps(batch).encode())
        for ident in (first, second):
            reply = server.wait_for(ident, 10)
            assert reply is not None, f"no answer for {ident} of the batch"
            assert reply["error"]["code"] == INVALID_REQUEST
        still_serving(server)


def test_an_empty_batch_or_a_bad_id_is_answered_with_a_null_id(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, env, tmp_path) as server:
        server.send(b"[]")
        server.send(line(jsonrpc="2.0", id={"an": "object"}, method="ping"))
        reply = server.wait_for(None, 10)
        assert reply is not None
        assert reply["error"]["code"] == INVALID_REQUEST
        still_serving(server)
        server.finish()
    for raw in server.lines:
        assert json.loads(raw)["jsonrpc"] == "2.0"


def test_notifications_and_responses_get_no_answer(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    with raw_server(repo, env, tmp_path) as server:
        before = len(server.lines)
        server.send(line(jsonrpc="2.0", method=7))  # a broken notification: nothing to name
        server.send(line(jsonrpc="2.0", id=424242, result={}))  # a response to nothing
        still_serving(server)
        assert len(server.lines) == before + 1  # only the status call's answer
