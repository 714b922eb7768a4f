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
"""

from __future__ import annotations

import json
import re
from typing import Any

from cortex.kernel.defaults import INTEGER_DIGITS as INTEGER_DIGITS_MAX

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
