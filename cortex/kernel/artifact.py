"""`cortex case read-artifact`: a bounded, redacted preview of a case's raw output.

A `case://<task>/raw/<raw id>` ref is readable only through its own case, and only once that
case cites it (an evidence record's rawRef or a receipt's artifact). The read is bounded
whatever the file's size, cut on a UTF-8 boundary, redacted again (for literals configured
since it was stored), and never writes.
"""

from __future__ import annotations

import base64
import os

from cortex.cases.bounds import PREVIEW_DEFAULT, PREVIEW_MAX
from cortex.cases.documents import Verification
from cortex.cases.errors import InvalidInputError, NotFoundError
from cortex.cases.fsio import open_for_read
from cortex.cases.ids import check_id
from cortex.cases.layout import ledger_file, parse_raw_ref, raw_name
from cortex.cases.ledger import line_containing
from cortex.cases.records import LedgerState
from cortex.kernel.context import Kernel
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError


def read_artifact(
    kernel: Kernel,
    task_id: str,
    ref: str,
    *,
    max_bytes: int | None = None,
    allow_binary: bool = False,
) -> Result:
    """The preview of `ref` (see the module docstring)."""
    limit = PREVIEW_DEFAULT if max_bytes is None else max_bytes
    if not 1 <= limit <= PREVIEW_MAX:
        raise InvalidInputError(f"--max-bytes must be 1 to {PREVIEW_MAX}")
    parts = parse_raw_ref(ref)
    if parts is None:
        raise InvalidInputError(f"{ref[:200]!r} is not a case://<task>/raw/<raw id> reference")
    owner, raw_id = check_id(parts[0], "task", what="ref task"), check_id(parts[1], "raw")
    if owner != task_id:
        msg = f"{ref} belongs to {owner}; a raw output is readable only through its own case"
        raise GateRefusedError(msg, [])
    store = kernel.locate(task_id)
    case, documents = store.read_view(task_id)
    citation = _citation(store.case_path(task_id), case, documents.get("verification.json"), ref)
    if citation is None:
        raise NotFoundError(f"case {task_id} cites no raw output {ref}")
    path = os.path.join(store.case_path(task_id), raw_name(raw_id))
    try:
        fd = open_for_read(path)
    except FileNotFoundError:
        raise NotFoundError(f"the raw output of {ref} is missing from the case") from None
    try:
        size = os.fstat(fd).st_size
        head = os.read(fd, limit + 4)  # bounded, whatever the file's size
    finally:
        os.close(fd)
    truncated = size > limit
    text = _utf8_prefix(head, limit)
    if text is None:
        if not allow_binary:
            msg = f"{ref} is binary; pass --allow-binary for a base64 preview"
            raise GateRefusedError(msg, [])
        chunk = head[:limit]
        return _result(
            ref,
            "base64",
            base64.b64encode(chunk).decode(),
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


def _citation(path: str, case: object, verification: Verification | None, ref: str) -> str | None:
    """How the case cites `ref`: "sensitive", "normal", or None when it does not."""
    from cortex.cases.records import CaseFile, Evidence, decode

    assert isinstance(case, CaseFile)  # noqa: S101 - typed loosely for the lazy import
    state = case.ledgers.get("evidence") or LedgerState()
    needle = b'"rawRef":"' + ref.encode() + b'"'
    line = line_containing(os.path.join(path, ledger_file("evidence")), state.bytes, needle)
    if line is not None:
        return decode(line, Evidence).sensitivity
    for receipt in verification.receipts if verification is not None else []:
        if receipt.artifact == ref:
            return "sensitive" if receipt.sensitive else "normal"
    return None
