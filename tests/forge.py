"""Forgeries of a case directory that `audit` cannot tell from the real thing.

An attacker who can write a state root (or push a replica built from one) does not stop at an
edit: they recompute every digest after it. `forge_receipts` does exactly that for the proof of
a case: every receipt and batch of verification.json names another tree, and case.json, the
last audit line's case digest and the commands ledger's tip are made to agree, so `cortex case
audit` passes and `cortex case share` exports it like any other case.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from cortex.cases import ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Verification
from cortex.cases.records import CaseFile, Command, case_digest, decode, encode, encode_pretty


def forge_receipts(case_dir: Path, *, tree: str, status: str | None = None) -> None:
    """Make every receipt of the case name `tree` (and say `status`), digests recomputed."""
    verification = decode((case_dir / "verification.json").read_bytes(), Verification)
    for batch in verification.batches:
        batch.tree = tree
        batch.binding = "bound"
        batch.reasons = []
    for receipt in verification.receipts:
        receipt.tree = tree
        receipt.binding = "bound"
        if status is not None:
            receipt.status = status  # type: ignore[assignment]
    data = encode_pretty(verification)
    (case_dir / "verification.json").write_bytes(data)
    case = decode((case_dir / "case.json").read_bytes(), CaseFile)
    case.snapshots["verification"].sha256 = sha256_hex(data)
    rewrite_last_command(case_dir, case)


def rewrite_last_command(case_dir: Path, case: CaseFile) -> None:
    """Point the last audit line at `case` and write case.json with the chain tip recomputed."""
    path = case_dir / "commands.jsonl"
    state = case.ledgers["commands"]
    lines = path.read_bytes()[: state.bytes].splitlines(keepends=True)
    last = decode(lines[-1].rstrip(b"\n"), Command)
    last.case_digest = case_digest(case)
    line = encode(last)
    lines[-1] = line + b"\n"
    body = b"".join(lines)
    path.write_bytes(body)
    case.ledgers["commands"] = msgspec.structs.replace(
        state, bytes=len(body), tip=ledger.line_hash(line)
    )
    (case_dir / "case.json").write_bytes(encode_pretty(case))
