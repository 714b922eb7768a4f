"""Tree artifacts: the manifest format and the rule for a member's relative path.

A tree artifact is a manifest blob, `raw/<raw id>.tree`, naming member blobs
`raw/<member raw id>.txt` (docs/design/artifacts.md). Both the writer and `audit` read the
manifest through this module; the kernel adds the capture and the reading.
"""

from __future__ import annotations

import unicodedata

import msgspec

from cortex.cases.bounds import TREE_DEPTH_MAX, TREE_PATH_MAX
from cortex.cases.errors import ArgumentError, InvalidInputError
from cortex.cases.records import Digest, Record
from cortex.cases.redact import clip

FORMAT = "cortex-tree/1"


class TreeMember(Record, kw_only=True):
    """One file of a tree: where it was, and the blob that holds it."""

    path: str
    raw: str
    size: int
    sha256: Digest


class TreeSkip(Record, kw_only=True):
    """An entry the capture did not keep, and why."""

    path: str
    reason: str


class TreeManifest(Record, kw_only=True):
    """What `raw/<raw id>.tree` holds."""

    format: str = FORMAT
    files: list[TreeMember] = msgspec.field(default_factory=list)
    skipped: list[TreeSkip] = msgspec.field(default_factory=list)
    walked: int = 0
    truncated: bool = False


def encode_manifest(manifest: TreeManifest) -> bytes:
    """One line of compact JSON: stable bytes for a stable digest."""
    return msgspec.json.encode(manifest) + b"\n"


def decode_manifest(data: bytes) -> TreeManifest:
    """A manifest's bytes, checked: the format is known and every member path is safe."""
    manifest = msgspec.json.decode(data, type=TreeManifest)
    if manifest.format != FORMAT:
        msg = f"unknown tree format {manifest.format!r}"
        raise InvalidInputError(msg)
    for member in manifest.files:
        member_path(member.path)
    return manifest


def member_path(path: str, what: str = "tree path") -> str:
    """`path` if it is a safe relative member path, else InvalidInputError saying why."""
    problem = path_problem(path)
    if problem is not None:
        rest = f" {clip(ascii(path), 120)} {problem}"
        if what.startswith("--"):
            name = what[2:].replace("-", "_")
            raise ArgumentError("{" + name + "}" + rest, name)
        raise InvalidInputError(what + rest)
    return path


def path_problem(path: str) -> str | None:
    """Why `path` is not a safe relative member path (None when it is).

    Refused: empty, too long or too deep; absolute; an empty, `.` or `..` component; a
    backslash; NUL and every other control character (C0, DEL, C1); bidi and other format
    characters, which can make a path read as another on a terminal. The reason never quotes
    the path, so it can be shown or stored without the name it describes.
    """
    if not path:
        return "is empty"
    if len(path.encode("utf-8", "surrogateescape")) > TREE_PATH_MAX:
        return f"is over {TREE_PATH_MAX} bytes"
    if path.startswith("/"):
        return "is absolute; give a path inside the artifact"
    if "\\" in path:
        return "contains a backslash"
    for char in path:
        if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            return "contains a control character"
        if unicodedata.category(char) in {"Cf", "Cs", "Zl", "Zp"}:
            return "contains an invisible or format character"
    parts = path.split("/")
    if len(parts) > TREE_DEPTH_MAX:
        return f"is more than {TREE_DEPTH_MAX} levels deep"
    if any(part in {"", ".", ".."} for part in parts):
        return "has an empty, '.' or '..' component"
    return None
