"""`cortex case evidence add`, `cortex case note` and `cortex case read-evidence`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from cortex.cases.bounds import (
    CLAIM_MAX,
    DERIVED_FROM_MAX,
    IDENTIFIER_MAX,
    NOTE_MAX,
    RAW_BLOB_MAX,
    SYMBOL_MAX,
    URI_MAX,
)
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import ArgumentError, InvalidInputError, NotFoundError, naming
from cortex.cases.ids import check_id, new_id
from cortex.cases.layout import raw_name, raw_ref, tree_name
from cortex.cases.records import (
    CaseFile,
    Evidence,
    Location,
)
from cortex.kernel import inputs, lifecycle, provenance, refs, validate
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Actor, Contests, Expect, Input, OriginArg, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import FINAL
from cortex.recall.notable import changes_cards

if TYPE_CHECKING:
    from cortex.cases.redact import Redactor
    from cortex.cases.txn import Transaction
    from cortex.workspace.raw_tree import Captured

RESERVED_KINDS = inputs.RESERVED_KINDS
"""Evidence kinds only the kernel writes: a `plan` record always carries the plan's blob."""


def _stage_tree(txn: Transaction, tree: Captured, redactor: Redactor) -> tuple[str, str, bool]:
    """Stage every member blob and the listing; (tree raw id, listing digest, redacted?).

    Members are redacted like any blob. Every string of the listing is redacted on its own (so
    the listing itself is stored as built: a pass over its JSON would read field boundaries as
    text); a path the redactor changed, or that then breaks the path rule or repeats another,
    is stored under a stand-in name, so every member stays readable. The listing is built from
    what will be stored, so its digest covers every member's.
    """
    from cortex.cases.tree import TreeManifest, TreeMember, TreeSkip, encode_manifest

    paths = _stored_paths([path for path, _ in tree.members], redactor)
    files: list[TreeMember] = []
    redacted = False
    for (path, data), stored_path in zip(tree.members, paths, strict=True):
        member_id = new_id("raw")
        stored, changed = txn.stage_blob(raw_name(member_id), data)
        redacted = redacted or changed or stored_path != path
        size, digest = len(stored), sha256_hex(stored)
        files.append(TreeMember(path=stored_path, raw=member_id, size=size, sha256=digest))
    skipped = []
    for path, reason in tree.skipped:
        shown, why = redactor(path), redactor(reason)
        redacted = redacted or shown != path or why != reason
        skipped.append(TreeSkip(path=shown, reason=why))
    manifest = TreeManifest(
        files=files, skipped=skipped, walked=tree.walked, truncated=tree.truncated
    )
    tree_id = new_id("raw")
    stored, _ = txn.stage_blob(tree_name(tree_id), encode_manifest(manifest), redact=False)
    return tree_id, sha256_hex(stored), redacted


def _stored_paths(paths: list[str], redactor: Redactor) -> list[str]:
    """Each member's path as stored: redacted, and still valid and unique (else a stand-in)."""
    from cortex.cases.tree import path_problem

    cleaned = [redactor(path) for path in paths]
    taken = {c for p, c in zip(paths, cleaned, strict=True) if c == p}
    stored: list[str] = []
    counter = 0
    for path, clean in zip(paths, cleaned, strict=True):
        if clean == path and clean not in stored:
            stored.append(clean)
            continue
        if clean != path and path_problem(clean) is None and clean not in taken:
            taken.add(clean)
            stored.append(clean)
            continue
        # Redacted into nothing usable, or into another member's name.
        counter += 1
        while f"redacted-{counter}" in taken:
            counter += 1
        stand_in = f"redacted-{counter}"
        taken.add(stand_in)
        stored.append(stand_in)
    return stored


def add_evidence(
    kernel: Kernel,
    task_id: str,
    *,
    claim: str,
    kind: str = inputs.EVIDENCE_KIND,
    tool: str = inputs.EVIDENCE_SOURCE,
    uri: str | None = None,
    origin: str = inputs.ORIGIN,
    file: str | None = None,
    line: str | None = None,
    symbol: str | None = None,
    confidence: str = inputs.CONFIDENCE,
    sensitive: bool = False,
    raw: bytes | None = None,
    raw_tree: Captured | None = None,
    derived_from: list[str] | None = None,
    contests: str | None = None,
    actor: str | None = None,
    expected_revision: int | None = None,
    operation: str = "case.evidence.add",
) -> Result:
    """Append one evidence record (and its raw blob or tree, if any) in one commit.

    With `file`, the record keeps what the file is now (its git blob id and HEAD) so that its
    freshness can be judged when it is shown. With `contests`, it disputes an answered decision
    of this repository's cases until a person resolves it (docs/design/recall.md).
    """
    redactor = kernel.redactor
    claim = validate.text(claim, "claim", NOTE_MAX if kind == "note" else CLAIM_MAX)
    checked_kind = validate.choice(kind, "--kind", validate.EVIDENCE_KINDS)
    if checked_kind in RESERVED_KINDS:
        msg = f"{{kind}} {kind} records are written by a plan only"
        raise ArgumentError(msg, "kind")
    checked_origin = validate.choice(origin, "--origin", validate.ORIGINS)
    checked_confidence = validate.choice(confidence, "--confidence", validate.CONFIDENCES)
    tool = validate.identifier(tool, "--source", redactor, max_bytes=IDENTIFIER_MAX)
    if uri is not None:
        uri = validate.short_text(uri, "--uri", URI_MAX)
    location = None
    if file is not None or line is not None or symbol is not None:
        start = end = None
        if line is not None:
            start, end = validate.line_range(line)
        path = None if file is None else validate.location_path(file, redactor)
        blob, head = _what_the_file_is(kernel, path)
        location = Location(
            file=path,
            start_line=start,
            end_line=end,
            symbol=None if symbol is None else validate.short_text(symbol, "--symbol", SYMBOL_MAX),
            blob=blob,
            head=head,
        )
    parents = list(derived_from or [])
    if len(parents) > DERIVED_FROM_MAX:
        raise ArgumentError(f"at most {DERIVED_FROM_MAX} {{derived_from}} ids", "derived_from")
    for parent in parents:
        refs.check(parent, "ev", what="--derived-from id")
    if len(set(parents)) != len(parents):
        raise ArgumentError("an id is given twice in {derived_from}", "derived_from")
    if raw is not None and len(raw) > RAW_BLOB_MAX:
        raise InvalidInputError(f"raw content is {len(raw)} bytes, over {RAW_BLOB_MAX}")
    if raw is not None and raw_tree is not None:
        raise InvalidInputError("give raw output as a file or as a directory, not both")
    who = kernel.actor(actor)
    task_id, store = kernel.find_writable(task_id)
    if contests is not None:
        check_id(contests, "dec", what="--contests id")
        from cortex.kernel.recall import contestable

        contestable(kernel, contests)

    with store.transaction(
        task_id, actor=who, operation=operation, expected_revision=expected_revision
    ) as txn:
        if txn.case.status in FINAL:
            raise lifecycle.refusal(txn.case, "cannot record evidence", txn=txn)
        if txn.case.status == "orienting":
            # The first evidence is where investigating starts.
            lifecycle.move(txn, "investigating", actor=who, now=kernel.now())
        elif txn.case.status == lifecycle.PAUSED and txn.case.paused_from == "orienting":
            # Paused before any evidence: the answer resumes it into the investigation. A
            # blocked case keeps the phase `block` announced; its next evidence moves it on.
            txn.case.paused_from = "investigating"
        if parents:
            parents = refs.evidence(store, txn.case, parents, argument="derived_from")
            known = store.find_records(txn.case, "evidence", parents)
            missing = [parent for parent in parents if parent not in known]
            if missing:
                raise naming(
                    NotFoundError(f"{{derived_from}} names evidence not in this case: {missing}"),
                    "derived_from",
                )
        reference = digest = None
        redacted_raw = False
        if raw is not None:
            raw_id = new_id("raw")
            stored, redacted_raw = txn.stage_blob(raw_name(raw_id), raw)
            reference = raw_ref(task_id, raw_id)
            digest = sha256_hex(stored)
        elif raw_tree is not None:
            raw_id, digest, redacted_raw = _stage_tree(txn, raw_tree, redactor)
            reference = raw_ref(task_id, raw_id)
        record = Evidence(
            id=new_id("ev"),
            timestamp=kernel.now(),
            kind=checked_kind,
            source=provenance.source(
                tool=tool,
                uri=uri,
                actor=who,
                origin=checked_origin,
                person_present=kernel.person_present,
            ),
            claim=claim,
            location=location,
            confidence=checked_confidence,
            sensitivity="sensitive" if sensitive or redacted_raw else "normal",
            raw_ref=reference,
            raw_sha256=digest,
            derived_from=parents,
            contests=contests,
        )
        txn.append("evidence", record)
        txn.target = record.id
    stored_record = txn.written["evidence"][0]
    committed = txn.outcome
    warnings = list(txn.warnings)
    if isinstance(stored_record, Evidence) and changes_cards(stored_record):
        from cortex.kernel.recall import after_commit

        warnings += after_commit(kernel, store, task_id)
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "evidence": stored_record,
            "recovered": txn.notes,
            "warnings": warnings,
        }
    )


def _what_the_file_is(kernel: Kernel, path: str | None) -> tuple[str | None, str | None]:
    """The blob id and HEAD of a named file in a git workspace, computed without git."""
    if path is None or kernel.workspace.kind != "git":
        return None, None
    from cortex.workspace.freshness import TOO_BIG, blob_id, head_commit

    blob = blob_id(kernel.workspace.root, path)
    return (None if blob == TOO_BIG else blob), head_commit(kernel.workspace.root)


def add_note(
    kernel: Kernel,
    task_id: str,
    *,
    text: str,
    origin: str = inputs.ORIGIN,
    contests: str | None = None,
    actor: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """A free-text note, kept as an evidence record of kind `note`."""
    return add_evidence(
        kernel,
        task_id,
        claim=text,
        kind="note",
        tool="cortex",
        origin=origin,
        contests=contests,
        actor=actor,
        expected_revision=expected_revision,
        operation="case.note",
    )


def read_evidence(kernel: Kernel, task_id: str, evidence_id: str) -> Result:
    """The full committed record of one piece of evidence (its id whole or a unique prefix)."""
    refs.check(evidence_id, "ev", what="evidence id")
    task_id, store = kernel.find(task_id)
    case: CaseFile = store.read_case(task_id)
    evidence_id = refs.evidence(store, case, [evidence_id], argument="evidence")[0]
    record = store.find_records(case, "evidence", [evidence_id]).get(evidence_id)
    if record is not None:
        return Result(
            data={
                "taskId": task_id,
                "revision": case.revision,
                "evidence": record,
                "warnings": store.debris(case),
            }
        )
    raise NotFoundError(f"no evidence {evidence_id} in case {task_id}")


class RecordEvidence(Input):
    """The input of `case evidence add`."""

    task_id: TaskId
    claim: Annotated[str, msgspec.Meta(description="what the evidence shows")]
    kind: Annotated[str, msgspec.Meta(description=inputs.one_of(inputs.EVIDENCE_KINDS))] = (
        inputs.EVIDENCE_KIND
    )
    source: Annotated[str, msgspec.Meta(description="the tool that produced it")] = (
        inputs.EVIDENCE_SOURCE
    )
    uri: Annotated[str | None, msgspec.Meta(description="where the source can be found")] = None
    origin: OriginArg = inputs.ORIGIN
    file: Annotated[str | None, msgspec.Meta(description="repository-relative file")] = None
    line: Annotated[str | None, msgspec.Meta(description="line or range, N or N-M")] = None
    symbol: Annotated[str | None, msgspec.Meta(description="symbol the claim is about")] = None
    confidence: Literal["high", "medium", "low", "unknown"] = inputs.CONFIDENCE
    sensitive: bool = False
    raw: Annotated[
        str | None,
        msgspec.Meta(description="raw tool output to keep (redacted, stored as a blob)"),
    ] = None
    raw_dir: Annotated[
        str | None,
        msgspec.Meta(
            description="a directory of raw output to keep, relative to the server's workspace "
            "(at most 100 files; symlinks are not followed)"
        ),
    ] = None
    derived_from: Annotated[list[str], msgspec.Meta(description="evidence ids this builds on")] = (
        msgspec.field(default_factory=list)
    )
    actor: Actor = None
    expect_revision: Expect = None
    contests: Contests = None
    raw_file: str | None = None
    """A file of raw output, or `-` for the call's stdin (the CLI's `--raw-file`)."""


class Note(Input):
    """The input of `case note`."""

    task_id: TaskId
    text: Annotated[str, msgspec.Meta(description="the note")]
    origin: OriginArg = inputs.ORIGIN
    actor: Actor = None
    expect_revision: Expect = None
    contests: Contests = None


class ReadEvidence(Input):
    """The input of `case read-evidence`."""

    task_id: TaskId
    evidence_id: Annotated[str, msgspec.Meta(description="ev_..., or a unique prefix of one")]


def record_evidence(kernel: Kernel, given: RecordEvidence) -> Result:
    """`add_evidence` for one input, its raw output gathered first.

    A relative `raw_file` or `raw_dir` resolves where the call runs (`kernel.cwd`), and `-`
    reads the call's stdin; over MCP a `raw_dir` must lie inside the workspace.
    """
    from cortex.kernel.steps.raw_input import gather

    raw, tree = gather(
        kernel,
        raw_file=given.raw_file,
        raw=given.raw,
        raw_dir=given.raw_dir,
        stdin=kernel.stdin,
        cwd=kernel.cwd,
        confine=kernel.via == "mcp",
    )
    return add_evidence(
        kernel,
        given.task_id,
        claim=given.claim,
        kind=given.kind,
        tool=given.source,
        uri=given.uri,
        origin=given.origin,
        file=given.file,
        line=given.line,
        symbol=given.symbol,
        confidence=given.confidence,
        sensitive=given.sensitive,
        raw=raw,
        raw_tree=tree,
        derived_from=given.derived_from,
        contests=given.contests,
        actor=given.actor,
        expected_revision=given.expect_revision,
    )


def note(kernel: Kernel, given: Note) -> Result:
    """`add_note` for one input."""
    return add_note(
        kernel,
        given.task_id,
        text=given.text,
        origin=given.origin,
        contests=given.contests,
        actor=given.actor,
        expected_revision=given.expect_revision,
    )


def read_one(kernel: Kernel, given: ReadEvidence) -> Result:
    """`read_evidence` for one input."""
    return read_evidence(kernel, given.task_id, given.evidence_id)
