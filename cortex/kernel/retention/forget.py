"""`cortex case forget`: a person removes one evidence record, or its raw output, for good.

The record is replaced by a tombstone that keeps every chain verifiable, a forget record says who,
when and why, and the recall index forgets the text too (docs/design/storage.md, "Forgetting a
record"). A person's act at a terminal (docs/design/trust.md): the CLI asks them to type the id;
no MCP tool forgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from cortex.cases.bounds import CLAIM_MAX, REASON_MAX
from cortex.cases.errors import ArgumentError, NotFoundError
from cortex.cases.ids import is_id, new_id
from cortex.cases.layout import ledger_file, raw_ref
from cortex.cases.records import Evidence, Source
from cortex.cases.store import CaseStore
from cortex.cases.tombstone import FORGOTTEN_TOOL
from cortex.kernel import validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Input, TaskId
from cortex.kernel.kernel import Kernel


class Asked(NamedTuple):
    """What the person is shown before they confirm, by typing `id`."""

    task_id: str
    id: str
    record: str
    what: Literal["record", "raw"]
    kind: str
    timestamp: str
    claim: str
    raw: str | None
    """The raw reference it forgets with it (or alone), if any."""


Confirm = Callable[[Asked], "str | None"]
"""A face's confirmation at a person's terminal: what they typed back (None: no terminal)."""

NEED_A_PERSON = (
    "forgetting is a person's act: run `cortex case forget` at an interactive terminal, which "
    "shows the record and asks for its id to be typed; nothing was forgotten"
)


def forget(
    kernel: Kernel,
    task_id: str,
    target: str,
    *,
    reason: str,
    confirm: Confirm | None,
    actor: str | None = None,
) -> Result:
    """Forget `target` (a whole `ev_` or `raw_` id) of a case of this workspace's store."""
    if not (is_id(target, "ev") or is_id(target, "raw")):
        msg = "{id} must be a whole evidence id (ev_...) or raw id (raw_...); prefixes are refused"
        raise ArgumentError(msg, "id")
    reason = validate.text(reason, "--reason", REASON_MAX)
    who = kernel.actor(actor)
    if not kernel.person_present or confirm is None:
        raise GateRefusedError(NEED_A_PERSON)
    task_id, store = kernel.find_writable(task_id)
    record, what = _record(store, task_id, target)
    asked = Asked(
        task_id=task_id,
        id=target,
        record=record.id,
        what=what,
        kind=record.kind,
        timestamp=record.timestamp,
        claim=record.claim,
        raw=record.raw_ref,
    )
    if confirm(asked) != target:
        msg = f"{target} was not typed at the terminal; nothing was forgotten"
        raise GateRefusedError(msg)
    head = f"forgot {target}: "
    room = CLAIM_MAX - len(head.encode())
    claim = head + reason.encode()[:room].decode("utf-8", "ignore")
    from cortex.kernel.retention.recall_rows import purge

    warnings = purge(kernel, store, task_id, derive=False, before=True)
    with store.transaction(task_id, actor=who, operation="case.forget") as txn:
        txn.target = target
        copies = txn.forget(record.id, what=what)
        markers = [
            txn.append(
                "evidence",
                Evidence(
                    id=new_id("ev"),
                    timestamp=kernel.now(),
                    kind="note",
                    source=Source(tool=FORGOTTEN_TOOL, actor=who, origin="human"),
                    claim=claim,
                    forgets=forgetting,
                ),
            )
            for forgetting in copies
        ]
    forgetting, marker = copies[0], markers[0]
    warnings += txn.warnings
    warnings += purge(kernel, store, task_id, derive=True)
    committed = txn.outcome
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "forgotten": target,
            "record": record.id,
            "what": what,
            "ledger": forgetting.ledger,
            "removedLine": forgetting.line,
            "removedRaw": [
                {"id": blob.id, "sha256": blob.sha256, "bytes": blob.bytes}
                for blob in forgetting.raw
            ],
            "forgetRecord": marker.id,
            "copies": [forgetting.ledger for forgetting in copies],
            "warnings": warnings,
        }
    )


def _record(
    store: CaseStore, task_id: str, target: str
) -> tuple[Evidence, Literal["record", "raw"]]:
    """The committed record `target` names (a raw id: the record citing it), and what goes."""
    case = store.read_case(task_id)
    if is_id(target, "ev"):
        found = store.find_records(case, "evidence", [target]).get(target)
        if not isinstance(found, Evidence):
            raise NotFoundError(f"no evidence record {target} in case {task_id}")
        return found, "record"
    from cortex.cases import ledger

    needle = b'"rawRef":"' + raw_ref(task_id, target).encode() + b'"'
    state = case.ledgers.get("evidence")
    path = f"{store.case_path(task_id)}/{ledger_file('evidence')}"
    line = ledger.line_containing(path, state.bytes if state else 0, needle)
    if line is None and "replicas" in case.snapshots:
        by_id = {
            record.id: record
            for record in store.read_ledger(case, "evidence")
            if isinstance(record, Evidence) and record.raw_ref == raw_ref(task_id, target)
        }
        if by_id:
            return next(iter(by_id.values())), "raw"
    if line is None:
        msg = f"no evidence record of case {task_id} cites raw output {target}"
        raise NotFoundError(msg)
    return ledger.parse_line(line, Evidence, where=ledger_file("evidence")), "raw"


class Forget(Input):
    """The input of `case forget` (a person's act at a terminal: the face asks them to confirm)."""

    task_id: TaskId
    record_id: str
    reason: str
    actor: Actor = None


def forget_record(kernel: Kernel, given: Forget, *, confirm: Confirm | None) -> Result:
    """`forget` for one input; `confirm` is the face's question to the person, if any."""
    return forget(
        kernel,
        given.task_id,
        given.record_id,
        reason=given.reason,
        confirm=confirm,
        actor=given.actor,
    )
