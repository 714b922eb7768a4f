"""The formats of hosts' configuration files, read and written without losing what they hold.

Claude Code's files are JSON, Codex's `config.toml` TOML (its `hooks.json` JSON). A JSON number
is kept exactly as written (`JsonNumber`), a duplicate key or a non-JSON constant is refused,
and a document is written back only in a form that reads as the same document.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from typing import Any

from cortex.cases.errors import InvalidInputError


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            # Rewriting would silently keep only the last: not "every other key exactly".
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class JsonNumber:
    """A JSON number exactly as written, equal to another when the text is.

    Through float, `1E2`, `-0`, `1.10`, `1e-400` and digits past double precision would
    change, and `1e400` would become `Infinity`, which is not JSON at all.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        if not text.isascii():  # the parser matches ASCII digits only; this keeps it so
            raise ValueError(f"{text!r} is not a JSON number")
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return self.text


def parse_json(path: str, raw: bytes) -> dict[str, Any]:
    """A Claude Code configuration: a JSON object whose `mcpServers`, if any, is an object.

    Numbers come back as `JsonNumber`, so writing the document again keeps them as they were.
    """
    try:
        document = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_refuse_duplicates,
            parse_constant=_no_constants,
            parse_float=JsonNumber,
            parse_int=JsonNumber,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidInputError(f"{path} is nested too deeply to be read") from None
    if not isinstance(document, dict):
        kind = "number" if isinstance(document, JsonNumber) else type(document).__name__
        msg = f"{path} holds a JSON {kind}, not an object"
        raise InvalidInputError(msg)
    if "mcpServers" in document and not isinstance(document["mcpServers"], dict):
        raise InvalidInputError(f"{path}: mcpServers is not an object")
    return document


def parse_toml(path: str, raw: bytes) -> dict[str, Any]:
    """A Codex configuration: TOML whose `mcp_servers`, if any, is a table."""
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid TOML ({exc})") from None
    except ValueError as exc:
        # Valid TOML Python will not read, such as an integer past 4300 digits.
        raise InvalidInputError(f"{path} cannot be read ({exc})") from None
    except RecursionError:
        raise InvalidInputError(f"{path} is nested too deeply to be read") from None
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInputError(f"{path}: mcp_servers is not a table")
    return document


def dump_json(document: dict[str, Any]) -> bytes:
    """The document as JSON, each `JsonNumber` written exactly as it was read."""
    # json.dumps cannot emit raw text: each number goes out as a placeholder string, replaced
    # afterwards. The random nonce makes a collision with a string in the file impossible.
    nonce = os.urandom(16).hex()
    texts: list[str] = []

    def placeholder(value: object) -> str:
        if not isinstance(value, JsonNumber):
            raise TypeError(f"{type(value).__name__} is not JSON")
        texts.append(value.text)
        return f"{nonce}-{len(texts) - 1}"

    try:
        text = json.dumps(document, indent=2, ensure_ascii=False, default=placeholder) + "\n"
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a `\ud800` escape) has no UTF-8 form; escaped, it reads the same.
        texts.clear()
        data = (json.dumps(document, indent=2, default=placeholder) + "\n").encode("ascii")
    held = re.compile(b'"' + nonce.encode() + b'-([0-9]+)"')
    return held.sub(lambda match: texts[int(match.group(1))].encode("ascii"), data)


def is_number(value: object) -> bool:
    """An int or a float (a bool is neither, here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
