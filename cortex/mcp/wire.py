"""Incoming lines the SDK would drop silently, turned into calls that get an envelope.

The SDK answers nothing to a request it cannot validate (a lone surrogate escape, which is valid
JSON text but not Unicode, or nesting deeper than its parser allows), and a protocol error to
tool arguments that are not an object. Each such `tools/call` line is rewritten into a call of
the reserved tool INVALID whose one argument says what was wrong, so the server answers it with
an invalid-input envelope (exit 4) like any other bad input, instead of leaving the client to
wait for a reply that never comes. Every other line passes through unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

INVALID = "\x00invalid-request"
"""A tool name no client can mean (it holds NUL): the server refuses it with `reason`."""

DEPTH_MAX = 64
"""Nesting allowed in a call's parameters: no tool takes more than two levels; the SDK's own
parser gives up (silently) at a few hundred."""

_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def repair(line: str) -> str:
    """The line to hand the SDK: `line` itself, or a call of INVALID that says why."""
    try:
        message = json.loads(line)
    except RecursionError:
        return _salvage(line, "the request is nested too deeply to read")
    except ValueError:
        return line  # not JSON at all: nothing to answer to
    if not isinstance(message, dict) or message.get("method") != "tools/call":
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
