"""Incoming lines the SDK would drop silently, turned into calls that get an envelope.

The SDK answers nothing to a request it cannot validate (a lone surrogate escape, which is valid
JSON text but not Unicode, nesting deeper than its parser allows, or a number past Python's
4,300-digit conversion limit), and a protocol error to tool arguments that are not an object.
Each such `tools/call` line is rewritten into a call of the reserved tool INVALID whose one
argument says what was wrong, so the server answers it with an invalid-input envelope (exit 4)
like any other bad input, instead of leaving the client to wait for a reply that never comes.

Numbers are bounded by their digits before anything converts them (INTEGER_DIGITS_MAX). Any
other request holding a longer one keeps its id and method but gets parameters the SDK refuses,
so it answers with its own "invalid parameters" error. A request whose id is itself such a
number cannot be answered (no reply could name it); it passes through, and the server carries
on. Every other line passes through unchanged.

`screen` comes first: a line that is not a request the SDK can take at all (not JSON, a
batch, no method or one that is not text, `jsonrpc` other than "2.0", parameters that are not
an object, an id that is neither text nor an integer) is answered here with the JSON-RPC 2.0
error code the specification gives, naming its id (null when it has none that a reply could
name), and is not handed on. The SDK would drop each of them silently, and a client waiting on
the id would hang. Notifications and responses are never answered.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cortex.kernel.inputs import INTEGER_DIGITS as INTEGER_DIGITS_MAX

INVALID = "\x00invalid-request"
"""A tool name no client can mean (it holds NUL): the server refuses it with `reason`."""

DEPTH_MAX = 64
"""Nesting allowed in a call's parameters: no tool takes more than two levels; the SDK's own
parser gives up (silently) at a few hundred."""

_ID = re.compile(
    rf'"id"\s*:\s*(-?\d{{1,{INTEGER_DIGITS_MAX}}}(?![0-9.eE])|"(?:[^"\\]|\\.){{0,200}}")'
)


class _Unread:
    """A JSON number of more than INTEGER_DIGITS_MAX digits, left unconverted."""

    __slots__ = ()


_UNREAD = _Unread()


# The digits are counted before conversion: int() refuses past 4,300 digits, in time that grows
# with the square of the length, and the SDK drops a request holding a number it cannot read.
def _integer(text: str) -> object:
    return _UNREAD if len(text.lstrip("-")) > INTEGER_DIGITS_MAX else int(text)


def _float(text: str) -> object:
    return _UNREAD if sum(c.isdigit() for c in text) > INTEGER_DIGITS_MAX else float(text)


PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

Refusal = tuple[object, int, str]
"""An error answer to send: (id, JSON-RPC code, message)."""


def screen(line: str) -> tuple[str | None, list[Refusal]]:
    """The line to hand on (None: none), and the error answers it needs (module docstring)."""
    if not line.strip():
        return None, []
    try:
        message = json.loads(line, parse_int=_integer, parse_float=_float)
    except RecursionError:
        return repair(line), []
    except ValueError:
        found = _ID.search(line[:4096])
        ident = json.loads(found.group(1)) if found is not None else None
        return None, [(ident, PARSE_ERROR, "parse error: the line is not JSON text")]
    if isinstance(message, list):
        if not message:
            return None, [(None, INVALID_REQUEST, "invalid request: an empty batch")]
        refusals = [
            (_named(item.get("id")), INVALID_REQUEST, "invalid request: batches are not supported")
            for item in message
            if isinstance(item, dict) and "id" in item and "method" in item
        ]
        return None, refusals
    if not isinstance(message, dict):
        return None, [(None, INVALID_REQUEST, "invalid request: not a JSON object")]
    if "method" not in message and ("result" in message or "error" in message):
        return line, []  # a response to one of the server's own requests
    if "id" not in message:
        valid = message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str)
        return (repair(line) if valid else None), []  # a notification: never answered
    ident = _named(message["id"])
    problem = _problem(message)
    if ident is None and message["id"] is not None:
        problem = problem or (INVALID_REQUEST, "invalid request: the id must be text or an integer")
    if problem is not None:
        return None, [(ident, *problem)]
    return repair(line), []


def _problem(message: dict[str, Any]) -> tuple[int, str] | None:
    if message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"'
    if "method" not in message:
        return INVALID_REQUEST, "invalid request: no method"
    if not isinstance(message["method"], str):
        return INVALID_REQUEST, "invalid request: the method must be text"
    if "params" in message and not isinstance(message["params"], dict):
        return INVALID_PARAMS, "invalid params: the parameters must be an object"
    return None


def _named(ident: object) -> object:
    """The id a reply can name: text or an integer (a bool is not one); else None."""
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return ident
    return None


def repair(line: str) -> str:
    """The line to hand the SDK: `line` itself, or a call of INVALID that says why."""
    try:
        message = json.loads(line, parse_int=_integer, parse_float=_float)
    except RecursionError:
        return _salvage(line, "the request is nested too deeply to read")
    except ValueError:
        return line  # not JSON at all: nothing to answer to
    if not isinstance(message, dict):
        return line
    if _holds_unread(message):
        return _refuse_numbers(message, line)
    if message.get("method") != "tools/call":
        return line
    params = message.get("params")
    if not isinstance(params, dict):
        return line
    reason = None
    arguments = params.get("arguments")
    if _deeper_than(params, DEPTH_MAX):
        reason = f"the request nests deeper than {DEPTH_MAX} levels"
    elif _has_surrogate(params):
        reason = "the request holds a lone surrogate escape, which is not Unicode text"
    elif arguments is not None and not isinstance(arguments, dict):
        reason = f"arguments must be an object, not {type(arguments).__name__}"
    if reason is None:
        return line
    return _invalid(message.get("id"), reason)


def _refuse_numbers(message: dict[str, Any], line: str) -> str:
    """A request holding an over-long number, rewritten so that it is answered."""
    ident, method = message.get("id"), message.get("method")
    if "id" not in message or isinstance(ident, _Unread) or not isinstance(method, str):
        return line  # a notification, a response, or an id no reply could name
    reason = f"the request holds a number of more than {INTEGER_DIGITS_MAX} digits"
    if method == "tools/call":
        return _invalid(ident, reason)
    # `_meta` must be an object in every request's parameters: the SDK refuses this one.
    request = {"jsonrpc": "2.0", "id": ident, "method": method, "params": {"_meta": reason}}
    return json.dumps(request) + "\n"


def _holds_unread(value: Any) -> bool:
    """Whether an over-long number is anywhere in `value` (iteratively: no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Unread):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _salvage(line: str, reason: str) -> str:
    """An unreadable request still gets an answer if its id can be found near its start."""
    found = _ID.search(line[:4096])
    if found is None:
        return line
    return _invalid(json.loads(found.group(1)), reason)


def _invalid(ident: Any, reason: str) -> str:
    call = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": INVALID, "arguments": {"reason": reason}},
    }
    return json.dumps(call) + "\n"


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels (iteratively: no recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # in C: refuses exactly the lone surrogates
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    return False
