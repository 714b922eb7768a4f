"""`cortex case read-artifact`: a bounded, redacted preview of a case's raw output.

A `case://<task>/raw/<raw id>` ref is readable only through its own case, and only once that
case cites it (an evidence record's rawRef or a receipt's artifact). The read is bounded
whatever the file's size, cut on a UTF-8 boundary, redacted again (for literals configured
since it was stored), and never writes. A ref naming a tree artifact answers with its listing,
or with one member's preview under `--path` (docs/design/artifacts.md).
"""

from __future__ import annotations

import base64
import os
import stat
from typing import Annotated, Any

import msgspec

from cortex.cases.bounds import PREVIEW_MAX, SNAPSHOT_MAX, TREE_FILES_MAX
from cortex.cases.documents import Verification
from cortex.cases.errors import (
    ArgumentError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    naming,
)
from cortex.cases.ids import check_id
from cortex.cases.layout import RAW_DIR, ledger_file, parse_raw_ref, raw_name, tree_name
from cortex.cases.ledger import line_containing
from cortex.cases.records import LedgerState
from cortex.cases.redact import clip
from cortex.cases.tree import TreeManifest, decode_manifest, member_path
from cortex.kernel import inputs
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input, TaskId
from cortex.kernel.kernel import Kernel

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = _READ_FLAGS | getattr(os, "O_DIRECTORY", 0)


def read_artifact(
    kernel: Kernel,
    task_id: str,
    ref: str,
    *,
    max_bytes: int | None = None,
    allow_binary: bool = False,
    path: str | None = None,
) -> Result:
    """The preview of `ref`, or of the member `path` of a tree `ref` (module docstring)."""
    limit = inputs.PREVIEW_BYTES if max_bytes is None else max_bytes
    if not 1 <= limit <= PREVIEW_MAX:
        raise ArgumentError(f"{{max_bytes}} must be 1 to {PREVIEW_MAX}", "max_bytes")
    if path is not None:
        member_path(path, "--path")  # refused before anything is read
    parts = parse_raw_ref(ref)
    if parts is None:
        raise InvalidInputError(f"{clip(ref, 200)!r} is not a case://<task>/raw/<raw id> reference")
    owner, raw_id = check_id(parts[0], "task", what="ref task"), check_id(parts[1], "raw")
    task_id, store = kernel.find(task_id)
    if owner != task_id:
        msg = f"{ref} belongs to {owner}; a raw output is readable only through its own case"
        raise GateRefusedError(msg, [])
    case, documents = store.read_view(task_id)
    citation = _citation(
        store.case_path(task_id),
        case,
        documents.get("verification.json"),
        ref,
        documents.get("replicas.json"),
    )
    if citation is None:
        raise NotFoundError(f"case {task_id} cites no raw output {ref}")
    raw_dir = _open_raw_dir(os.path.join(store.case_path(task_id), RAW_DIR))
    try:
        return _read(kernel, raw_dir, ref, raw_id, path, limit, citation, allow_binary)
    finally:
        os.close(raw_dir)


def preview_cited(kernel: Kernel, store_path: str, task_id: str, ref: str, *, limit: int) -> Result:
    """The preview of `ref` for a caller that already holds the record citing it.

    `read_artifact` first finds a citation by searching the evidence ledger; a reader that
    has the citing record in hand (the report, which read it from the ledger's end) skips that
    search, so its cost stays that of the preview. The same bounded, redacted read follows; a
    directory answers with its listing, a binary blob is refused (`allow_binary` is off).
    """
    parts = parse_raw_ref(ref)
    if parts is None or parts[0] != task_id:
        raise InvalidInputError(f"{clip(ref, 200)!r} is not a raw output of {task_id}")
    raw_id = check_id(parts[1], "raw")
    raw_dir = _open_raw_dir(os.path.join(store_path, RAW_DIR))
    try:
        return _read(kernel, raw_dir, ref, raw_id, None, limit, "normal", allow_binary=False)
    finally:
        os.close(raw_dir)


def _read(  # noqa: PLR0917 - one read's whole context, passed on once
    kernel: Kernel,
    raw_dir: int,
    ref: str,
    raw_id: str,
    path: str | None,
    limit: int,
    citation: str,
    allow_binary: bool,
) -> Result:
    """Read under the held raw/ descriptor: no path is resolved from the case directory again."""
    tree = os.path.basename(tree_name(raw_id))
    blob_name = os.path.basename(raw_name(raw_id))
    if _exists(raw_dir, tree):
        if _exists(raw_dir, blob_name):
            # One raw id is a file or a tree, never both: one of them was planted.
            raise IntegrityError(
                f"{ref} is stored both as a file and as a tree; run cortex case audit"
            )
        manifest = _manifest(raw_dir, tree, ref)
        if path is None:
            return _listing(ref, manifest, sensitive=citation == "sensitive")
        member = next((m for m in manifest.files if m.path == path), None)
        if member is None:
            raise naming(
                NotFoundError(f"{ref} has no file {path!r}; read the listing without {{path}}"),
                "path",
            )
        blob_name = os.path.basename(raw_name(member.raw))
        facts: dict[str, object] = {"path": path}
    else:
        if path is not None:
            msg = f"{ref} is a single file; {{path}} selects a file inside a directory artifact"
            raise ArgumentError(msg, "path")
        facts = {}
    fd = _open_in(raw_dir, blob_name, ref)
    return _preview(kernel, ref, fd, limit, citation=citation, allow_binary=allow_binary, **facts)


def _open_raw_dir(path: str) -> int:
    """raw/ as a descriptor, refusing a symlink: every blob is then opened relative to it."""
    try:
        return os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        raise NotFoundError("the case has no raw output on disk") from None
    except OSError as exc:
        msg = f"{path} is not a real directory ({exc.strerror}); refusing to read through it"
        raise IntegrityError(msg) from None


def _exists(raw_dir: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=raw_dir, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _open_in(raw_dir: int, name: str, ref: str) -> int:
    """A blob under raw/, not through a symlink, and only if it is a regular file."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=raw_dir)
    except FileNotFoundError:
        raise NotFoundError(f"the raw output of {ref} is missing from the case") from None
    except OSError as exc:
        raise IntegrityError(f"raw/{name} cannot be read safely ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IntegrityError(f"raw/{name} is not a regular file")
    return fd


def _manifest(raw_dir: int, name: str, ref: str) -> TreeManifest:
    fd = _open_in(raw_dir, name, ref)
    try:
        data = os.read(fd, SNAPSHOT_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > SNAPSHOT_MAX:
        raise IntegrityError(f"the listing of {ref} is over {SNAPSHOT_MAX} bytes")
    try:
        return decode_manifest(data)
    except (msgspec.DecodeError, InvalidInputError) as exc:
        raise IntegrityError(f"the listing of {ref} is damaged ({exc})") from None


def _listing(ref: str, manifest: TreeManifest, *, sensitive: bool) -> Result:
    files = [{"path": m.path, "size": m.size, "sha256": m.sha256} for m in manifest.files]
    skipped = [{"path": s.path, "reason": s.reason} for s in manifest.skipped]
    return Result(
        data={
            "ref": ref,
            "kind": "directory",
            "sensitive": sensitive,
            "files": files[:TREE_FILES_MAX],
            "count": len(files),
            "skipped": skipped,
            "walked": manifest.walked,
            "truncated": manifest.truncated,
        }
    )


def _preview(
    kernel: Kernel,
    ref: str,
    fd: int,
    limit: int,
    *,
    citation: str,
    allow_binary: bool,
    **facts: object,
) -> Result:
    """A bounded preview of one stored blob (a file artifact or a tree member); closes `fd`."""
    try:
        size = os.fstat(fd).st_size
        head = os.read(fd, limit + 4)  # bounded, whatever the file's size
    finally:
        os.close(fd)
    truncated = size > limit
    text = _utf8_prefix(head, limit)
    if text is None:
        if not allow_binary:
            msg = f"{ref} is binary; pass {{allow_binary}} for a base64 preview"
            raise naming(GateRefusedError(msg, []), "allow_binary")
        chunk = head[:limit]
        return _result(
            ref,
            "base64",
            base64.b64encode(chunk).decode(),
            **facts,
            sensitive=True,
            truncated=truncated,
            size=size,
            maxBytes=limit,
            bytesReturned=len(chunk),
        )
    shown = kernel.redactor(text)
    sensitive = shown != text or citation == "sensitive"
    return _result(
        ref,
        "utf-8",
        shown,
        **facts,
        sensitive=sensitive,
        truncated=truncated or len(text.encode("utf-8")) < min(size, limit),
        size=size,
        maxBytes=limit,
        bytesReturned=len(text.encode("utf-8")),
    )


def _result(ref: str, encoding: str, content: str, **facts: object) -> Result:
    return Result(data={"ref": ref, "encoding": encoding, **facts, "content": content})


def _utf8_prefix(data: bytes, limit: int) -> str | None:
    """The longest UTF-8 text of at most `limit` bytes, or None when the data is binary."""
    if b"\0" in data[:limit]:
        return None
    cut = data[:limit]
    for back in range(4):
        try:
            return cut[: len(cut) - back].decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(cut) - 4:
                return None  # invalid before the cut, not a character split by it
    return None


def _citation(
    path: str, case: object, verification: Verification | None, ref: str, index: Any = None
) -> str | None:
    """How the case cites `ref`: "sensitive", "normal", or None when it does not."""
    from cortex.cases.records import CaseFile, Evidence, decode

    assert isinstance(case, CaseFile)  # noqa: S101 - typed loosely for the lazy import
    state = case.ledgers.get("evidence") or LedgerState()
    needle = b'"rawRef":"' + ref.encode() + b'"'
    line = line_containing(os.path.join(path, ledger_file("evidence")), state.bytes, needle)
    if line is not None:
        return decode(line, Evidence).sensitivity
    if "replicas" in case.snapshots:
        # A record imported from another replica may cite it (docs/design/sharing.md).
        from cortex.cases.layout import replica_ledger
        from cortex.cases.replicas import parse

        for replica in index.replicas if index is not None else []:
            extent = replica.ledgers.get("evidence") or LedgerState()
            file = os.path.join(path, replica_ledger(replica.key, "evidence"))
            found = line_containing(file, extent.bytes, needle)
            if found is None:
                continue
            record, meta = parse(found, Evidence, where=replica.key)
            if meta is not None and meta.raw is not None and meta.raw.withheld:
                msg = (
                    f"{ref} was not shared: replica {replica.key} withheld it "
                    f"({meta.raw.withheld}: {meta.raw.size} bytes, sha256 {meta.raw.sha256}); "
                    "it is only on the machine that recorded it"
                )
                raise NotFoundError(msg)
            return record.sensitivity
    for receipt in verification.receipts if verification is not None else []:
        if receipt.artifact == ref:
            return "sensitive" if receipt.sensitive else "normal"
    return None


class ReadArtifact(Input):
    """The input of `case read-artifact`."""

    task_id: TaskId
    ref: Annotated[str, msgspec.Meta(description="case://<task>/raw/<raw id>")]
    max_bytes: Annotated[int, msgspec.Meta(description="at most 131072")] = inputs.PREVIEW_BYTES
    allow_binary: bool = False
    path: Annotated[
        str | None,
        msgspec.Meta(description="a file inside a directory artifact; without it, the listing"),
    ] = None


def preview(kernel: Kernel, given: ReadArtifact) -> Result:
    """`read_artifact` for one input."""
    return read_artifact(
        kernel,
        given.task_id,
        given.ref,
        max_bytes=given.max_bytes,
        allow_binary=given.allow_binary,
        path=given.path,
    )
