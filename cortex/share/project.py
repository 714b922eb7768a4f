"""What a record, a blob or a snapshot becomes on its way out (docs/design/sharing.md).

- The sharing machine's absolute paths (workspace, state, cases, home) become placeholders.
- A sensitive evidence record becomes a stub; a blob over SHARE_BLOB_MAX is withheld.
- A line the export had to change carries `"share": {"line": <stored line's sha256>, ...}`,
  so its replica's chain still verifies anywhere.
- The content digest of a state, which fencing and conflict detection compare.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from cortex.cases.bounds import SHARE_BLOB_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.records import (
    CaseFile,
    Evidence,
    LedgerRecord,
    Source,
    encode,
    encode_pretty,
)
from cortex.cases.replicas import WITHHELD_CLAIM, WITHHELD_TOOL, RawMeta, ShareMeta

_S = TypeVar("_S", bound=msgspec.Struct)

WORKSPACE = "<workspace>"
CONTENT_FIELDS = (
    "goal",
    "mode",
    "status",
    "paused_from",
    "actor",
    "risk",
    "parent_task_id",
    "child_task_ids",
    "surfaces",
    "change_boundary",
    "change_lease",
    "verification_required",
    "acceptance_criteria",
    "status_reason",
    "created_at",
)
"""What of case.json a state is (bookkeeping, the workspace and the idempotency key aside)."""
ADOPTED_FIELDS = tuple(f for f in CONTENT_FIELDS if f not in ("acceptance_criteria", "created_at"))
"""What an adoption copies (the immutable fields are the same on every replica already)."""


def machine_paths(
    workspace: str, common_dir: str | None, cases: str, state: str, home: str | None
) -> PathMap:
    """This machine's absolute paths that never leave it, and their placeholders."""
    pairs = [(workspace, "<workspace>")]
    if common_dir:
        pairs.append((os.path.dirname(common_dir), "<workspace>"))
    pairs += [(cases, "<cases>"), (state, "<state>")]
    if home and os.path.isabs(home) and home.rstrip("/"):
        pairs.append((home, "<home>"))
    return PathMap(pairs)


class PathMap:
    """The sharing machine's absolute paths, and the placeholders they become."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        seen: dict[str, str] = {}
        for path, placeholder in pairs:
            for form in {path, os.path.realpath(path)}:
                clean = form.rstrip("/")
                if clean.count("/") >= 2 or (clean.count("/") == 1 and len(clean) > 4):
                    seen.setdefault(clean, placeholder)
        self.paths = sorted(seen, key=len, reverse=True)
        self.placeholders = seen
        if self.paths:
            body = "|".join(re.escape(p) for p in self.paths)
            self._text: re.Pattern[str] | None = re.compile(f"({body})(?![A-Za-z0-9._-])")
            self._bytes: re.Pattern[bytes] | None = re.compile(
                f"({body})(?![A-Za-z0-9._-])".encode("utf-8", "surrogateescape")
            )
            self._needles = [p.encode("utf-8", "surrogateescape") for p in self.paths]
        else:
            self._text = self._bytes = None
            self._needles = []

    def text(self, value: str) -> str:
        """`value` with every path replaced."""
        if self._text is None or not any(p in value for p in self.paths):
            return value
        return self._text.sub(lambda m: self.placeholders[m.group(1)], value)

    def data(self, value: bytes) -> bytes:
        """Bytes with every path replaced."""
        if self._bytes is None or not self.present(value):
            return value
        return self._bytes.sub(
            lambda m: self.placeholders[m.group(1).decode("utf-8", "surrogateescape")].encode(),
            value,
        )

    def present(self, value: bytes) -> bool:
        """Whether any of the paths occurs in `value` (the last check before anything leaves)."""
        return any(needle in value for needle in self._needles)

    def walk(self, value: Any) -> Any:
        """Plain data (from `msgspec.to_builtins`) with every string mapped."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        return value

    def struct(self, record: _S) -> _S:
        """A Struct with every string mapped (the same object when nothing changed)."""
        data = encode(record)
        if not self.present(data):
            return record
        mapped = self.walk(msgspec.to_builtins(record))
        return msgspec.convert(mapped, type(record))


def with_share(record: msgspec.Struct, meta: ShareMeta) -> bytes:
    """A record's line with the `share` member last (its `id` stays first, for lookups)."""
    body = encode(record)
    return body[:-1] + b',"share":' + encode(meta) + b"}"


def stub(record: Evidence, line: bytes) -> bytes:
    """The exported line of a sensitive record: what it is, never what it says."""
    kept = Evidence(
        id=record.id,
        timestamp=record.timestamp,
        kind=record.kind,
        source=Source(tool=WITHHELD_TOOL),
        claim=WITHHELD_CLAIM,
        confidence=record.confidence,
        sensitivity="sensitive",
        revision=record.revision,
        prev=record.prev,
    )
    meta = ShareMeta(line=sha256_hex(line), size=len(line), withheld="sensitive")
    return with_share(kept, meta)


class BlobOut(msgspec.Struct, kw_only=True):
    """A raw blob as it will leave: its path in the tree and bytes, or why it stays."""

    raw_id: str
    tree: bool
    size: int
    sha256: str
    """As stored on this machine (what the record's rawSha256 says)."""
    exported: dict[str, bytes] = msgspec.field(default_factory=dict)
    """Tree path -> bytes: the blob (and, for a tree, its members), after path mapping."""
    shared_sha256: str | None = None
    """The digest of the blob as exported (None when withheld)."""
    withheld: str | None = None


def project_line(
    record: LedgerRecord, line: bytes, paths: PathMap, blob: BlobOut | None
) -> tuple[bytes, str | None]:
    """The exported form of one stored line, and what it withholds (`sensitive`, `size`)."""
    if isinstance(record, Evidence) and record.sensitivity == "sensitive":
        return stub(record, line), "sensitive"
    raw: RawMeta | None = None
    changed = record
    if blob is not None and (blob.withheld or blob.shared_sha256 != blob.sha256):
        raw = RawMeta(size=blob.size, sha256=blob.sha256, withheld=blob.withheld)
        if blob.shared_sha256 is not None and isinstance(changed, Evidence):
            changed = msgspec.structs.replace(changed, raw_sha256=blob.shared_sha256)
    if paths.present(line):
        changed = paths.struct(changed)
    if changed is record and raw is None:
        return line, None
    meta = ShareMeta(line=sha256_hex(line), raw=raw)
    return with_share(changed, meta), blob.withheld if blob is not None else None


def project_case(case: CaseFile, paths: PathMap) -> CaseFile:
    """case.json as it leaves: the workspace root a placeholder, every path mapped."""
    workspace = msgspec.structs.replace(case.workspace, root=WORKSPACE)
    return paths.struct(msgspec.structs.replace(case, workspace=workspace))


def project_text(data: bytes, paths: PathMap) -> bytes:
    """A blob or summary as it leaves."""
    return paths.data(data)


def project_document(data: bytes, type_: type[_S], paths: PathMap) -> bytes:
    """A snapshot as it leaves: the stored bytes, unless a path in them must be mapped."""
    if not paths.present(data):
        return data
    document = msgspec.json.decode(data, type=type_)
    return encode_pretty(paths.struct(document))


def content_digest(case: CaseFile, snapshots: dict[str, str], summary: str | None) -> str:
    """The digest of a state: case.json's content fields and each snapshot's exported digest.

    Two replicas holding the same state compute the same digest, whichever wrote it, since an
    adoption copies the fields and the snapshot bytes exactly.
    """
    fields = {name: msgspec.to_builtins(getattr(case, name)) for name in CONTENT_FIELDS}
    value = {"case": fields, "snapshots": dict(sorted(snapshots.items())), "summary": summary}
    return sha256_hex(msgspec.json.encode(value, order="sorted"))


def over_bound(size: int) -> bool:
    """Whether a blob of `size` bytes stays home."""
    return size > SHARE_BLOB_MAX
