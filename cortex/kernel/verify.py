"""`cortex case verify`: one call, one batch of receipts bound to the code they ran on.

Steps and why each exists are in docs/design/verification.md §3. In short: capture the
workspace, run the plan's verifiers without holding the case lock, then under the lock capture
again and commit every output of the run together; the batch is bound only if nothing moved.
"""

from __future__ import annotations

import os
import re

import msgspec

from cortex.cases.bounds import (
    BATCHES_KEPT,
    CLAIM_ID_MAX,
    CLAIM_REGISTRY_MAX,
    CLAIM_STATEMENT_MAX,
    CLAIMS_MAX,
    CONTRACT_MAX,
    CONTRACTS_MAX,
    LEDGER_RECORD_MAX,
    NOTES_MAX,
    RAW_BLOB_MAX,
    SUMMARY_MAX,
)
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Batch, ClaimTerms, Receipt, ReceiptStatus, Verification
from cortex.cases.errors import InvalidInputError
from cortex.cases.ids import new_id
from cortex.cases.layout import raw_name, raw_ref
from cortex.cases.records import CaseFile, Evidence, LedgerState, Source
from cortex.cases.redact import clip
from cortex.cases.store import CaseStore
from cortex.kernel import lifecycle, validate
from cortex.kernel.assessment import assess
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import require_lease_holder, state
from cortex.verifiers.base import Context, Outcome, Verifier, split
from cortex.workspace.capture import Capture, capture, committed_changes

_CLAIM_ID = re.compile(r"[A-Za-z0-9_-]{1,%d}" % CLAIM_ID_MAX)  # noqa: UP031


class Claim(msgspec.Struct, kw_only=True):
    """A named claim as given: `--claim ID=STATEMENT` with `--contract ID=REQ[#SELECTOR]`."""

    id: str
    statement: str
    requirement: str
    selector: str | None

    @property
    def contract(self) -> str:
        """The contract as stored."""
        return self.requirement + (f"#{self.selector}" if self.selector else "")


class _Run(msgspec.Struct, kw_only=True):
    requirement: str
    verifier: Verifier
    outcome: Outcome


def live_capture(kernel: Kernel, case: CaseFile, *, writer: bool = True) -> Capture:
    """The workspace as it is now, for the case's own workspace (or why it cannot be bound).

    Writers keep the index mirror fresh; readers (`writer=False`) use it only if it is already
    there, and write nothing.
    """
    if case.workspace.kind != "git":
        return Capture(reason="the workspace is not a git repository")
    from cortex.cases.digest import sha256_hex

    key = sha256_hex(os.fsencode(case.workspace.root))[:16]
    mirror = os.path.join(kernel.state_root, "index-mirror", key)
    return capture(
        case.workspace.root,
        kernel.env,
        exclude=kernel.cases_root,
        mirror_dir=mirror,
        refresh=writer,
    )


def parse_claims(
    kernel: Kernel, claims: list[str], contracts: list[str], required: list[str]
) -> list[Claim]:
    """Validate `--claim` and `--contract` values (exit 4 on anything malformed)."""
    if len(claims) > CLAIMS_MAX:
        raise InvalidInputError(f"at most {CLAIMS_MAX} claims per verify call")
    statements: dict[str, str] = {}
    for spec in claims:
        claim_id, sep, statement = spec.partition("=")
        if not sep or not _CLAIM_ID.fullmatch(claim_id):
            msg = (
                f"--claim must be ID=STATEMENT with an id of letters, digits, _ and -, not {spec!r}"
            )
            raise InvalidInputError(clip(msg, 400))
        if claim_id in statements:
            raise InvalidInputError(f"--claim {claim_id} is given twice")
        if kernel.redactor.looks_secret(claim_id):
            raise InvalidInputError("a claim id looks like a secret; name the claim instead")
        statements[claim_id] = validate.text(statement, f"claim {claim_id}", CLAIM_STATEMENT_MAX)
    mapped: dict[str, tuple[str, str | None]] = {}
    for spec in contracts:
        claim_id, sep, contract = spec.partition("=")
        if not sep or claim_id not in statements:
            msg = f"--contract must be ID=REQUIREMENT for a claim given with --claim, not {spec!r}"
            raise InvalidInputError(clip(msg, 400))
        if claim_id in mapped:
            raise InvalidInputError(f"--contract {claim_id} is given twice")
        try:
            size = len(contract.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInputError(f"the contract of {claim_id} is not valid UTF-8") from None
        if not contract or size > CONTRACT_MAX:
            raise InvalidInputError(f"contract of {claim_id} must be 1 to {CONTRACT_MAX} bytes")
        if kernel.redactor.looks_secret(contract):
            msg = f"the contract of {claim_id} looks like it contains a secret; name a verifier"
            raise InvalidInputError(msg)
        requirement, hashed, selector = contract.partition("#")
        if requirement not in required:
            known = ", ".join(required) or "none"
            msg = f"the contract of {claim_id} names {requirement!r}, which the plan does not "
            msg += f"require (the plan's verifiers: {known})"
            raise InvalidInputError(msg)
        if hashed and (not selector or any(ord(ch) < 32 for ch in selector)):
            raise InvalidInputError(f"the contract selector of {claim_id} is empty or invalid")
        mapped[claim_id] = (requirement, selector or None)
    missing = [claim_id for claim_id in statements if claim_id not in mapped]
    if missing:
        msg = f"each claim needs --contract ID=REQUIREMENT naming what proves it: {missing[0]}"
        raise InvalidInputError(msg)
    return [
        Claim(id=i, statement=s, requirement=mapped[i][0], selector=mapped[i][1])
        for i, s in statements.items()
    ]


def _check_claims(kernel: Kernel, case: CaseFile, claims: list[Claim], old: Verification) -> None:
    """Criteria need their exact statement; a claim id keeps its meaning for the whole case."""
    criteria = {c.id: c.statement for c in case.acceptance_criteria}
    earlier = {key: (terms.statement, terms.contract) for key, terms in old.claims.items()}
    new = {claim.id for claim in claims} - set(earlier)
    if len(earlier) + len(new) > CLAIM_REGISTRY_MAX:
        msg = f"a case may use at most {CLAIM_REGISTRY_MAX} distinct claim ids"
        raise InvalidInputError(msg)
    for claim in claims:
        stored = kernel.redactor(claim.statement)
        if claim.id in criteria and criteria[claim.id] != stored:
            msg = (
                f"claim {claim.id} is an acceptance criterion and must repeat its statement "
                f"exactly: {criteria[claim.id][:300]!r}"
            )
            raise GateRefusedError(msg, [])
        previous = earlier.get(claim.id)
        if previous is not None and previous != (stored, claim.contract):
            msg = f"claim {claim.id} was already used for another statement or contract; "
            msg += "use a new id for a new claim"
            raise GateRefusedError(msg, [])


def _check_phase(case: CaseFile) -> None:
    if case.status == "verifying":
        return
    lifecycle.require(case, "verifying", doing="verify")


def _lease_actor(kernel: Kernel, case: CaseFile, actor: str | None) -> str:
    """The verify actor: the one given, else the active lease's holder, else the default."""
    lease = case.change_lease
    active = lease is not None and state(lease, kernel.clock()) == "active"
    if actor is None and active and lease is not None:
        return lease.actor
    who = kernel.actor(actor)
    if active and lease is not None and lease.actor != who:
        msg = f"the change lease is held by {lease.actor} until {lease.expires_at}; "
        msg += "only its holder verifies while it is held"
        raise LeaseConflictError(msg)
    if case.mode == "change" and not active:
        msg = "verifying a change needs an active change lease (it expired or was released); "
        msg += f"take it with `cortex case begin-change {case.id} --actor {who}`"
        raise LeaseConflictError(msg)
    return who


def _lease_identity(kernel: Kernel, case: CaseFile) -> tuple[str, str] | None:
    lease = case.change_lease
    if lease is None or state(lease, kernel.clock()) != "active":
        return None
    return lease.actor, lease.acquired_at


def _changed_files(kernel: Kernel, case: CaseFile, start: Capture) -> list[str] | None:
    if not start.bound or start.head is None:
        return None
    changed = list(start.changed)
    base = case.workspace.commit_before
    if base and base != start.head:
        committed = committed_changes(case.workspace.root, kernel.env, base, start.head)
        if committed is None:
            return None
        changed = sorted(set(changed) | set(committed))
    return changed


def _gates(case: CaseFile, changed: list[str] | None, *, no_op: bool, ack_drift: bool) -> None:
    if case.mode != "change" or changed is None:
        return
    if not changed and not no_op:
        msg = "the work tree has no changes since the case was opened; a change task with "
        msg += "nothing to change needs --no-op"
        raise GateRefusedError(
            msg, [Action(command=f"cortex case verify {case.id} --no-op", reason="no change")]
        )
    boundary = case.change_boundary.files
    if case.risk == "high" and boundary and not ack_drift:
        from cortex.verifiers.scope import drift

        outside = drift(changed, boundary)
        if outside:
            msg = f"a high-risk change touched {len(outside)} file(s) outside its boundary "
            msg += f"({', '.join(outside[:5])}); re-plan the boundary or pass --ack-drift"
            raise GateRefusedError(
                msg,
                [
                    Action(
                        command=f"cortex case verify {case.id} --ack-drift",
                        reason="accept the drift on record",
                    )
                ],
            )


def _approver(kernel: Kernel, root: str):  # type: ignore[no-untyped-def]  # noqa: ANN202
    from cortex.kernel import grants

    cache: list[grants.Grants] = []

    def approve(name: str, argv: object) -> bool:
        if grants.env_approves(kernel.env):
            return True
        if not cache:
            cache.append(grants.load(kernel.env))
        return grants.granted(cache[0], root, name, list(argv))  # type: ignore[call-overload]

    return approve


def _check(requirement: str, verifier: Verifier, context: Context) -> str | None:
    """A verifier's configuration check; a plugin that raises is a configuration problem."""
    try:
        problem = verifier.check(requirement, context)
    except Exception as exc:  # noqa: BLE001 - a broken plugin is bad input, not a crash
        return clip(
            f"{requirement}: the verifier's check failed ({type(exc).__name__}: {exc})", 500
        )
    return None if problem is None else clip(str(problem), SUMMARY_MAX)


def _run_all(verifiers: list[tuple[str, Verifier]], context: Context) -> list[_Run]:
    runs: list[_Run] = []
    for requirement, verifier in verifiers:
        try:
            outcome = _checked(verifier.run(requirement, context))
        except Exception as exc:  # noqa: BLE001 - a broken verifier blocks, it does not crash us
            outcome = Outcome(
                status="blocked",
                summary=f"{requirement}: the verifier failed ({type(exc).__name__})",
                notes=[clip(str(exc), 500)],
            )
        runs.append(_Run(requirement=requirement, verifier=verifier, outcome=outcome))
    return runs


def _checked(outcome: object) -> Outcome:
    """A plugin's outcome, validated and bounded like input (a bad one raises)."""
    if not isinstance(outcome, Outcome):
        msg = f"run() returned {type(outcome).__name__}, not an Outcome"
        raise TypeError(msg)
    valid = msgspec.convert(msgspec.to_builtins(outcome, builtin_types=(bytes,)), Outcome)
    # Cut between words: these are redacted when stored, and a cut secret is not recognised.
    valid.summary = clip(valid.summary, SUMMARY_MAX)
    valid.notes = [clip(note, SUMMARY_MAX) for note in valid.notes[:NOTES_MAX]]
    valid.findings = valid.findings[:NOTES_MAX]
    for finding in valid.findings:
        finding.claim = clip(finding.claim, CLAIM_STATEMENT_MAX)
    if len(valid.contracts) > CONTRACTS_MAX:
        valid.contracts = dict(list(valid.contracts.items())[:CONTRACTS_MAX])
        valid.notes.append(f"only the first {CONTRACTS_MAX} contract results were kept")
    valid.details = dict(list(valid.details.items())[:NOTES_MAX])
    msgspec.json.encode(valid)  # text that cannot be stored (a lone surrogate) raises here
    if valid.raw is not None and len(valid.raw) > RAW_BLOB_MAX:
        cut = max(valid.raw.rfind(space, 0, RAW_BLOB_MAX) for space in (b"\n", b" ", b"\t"))
        valid.raw = valid.raw[: cut + 1 if cut >= 0 else RAW_BLOB_MAX]
        valid.notes.append(f"the raw output was cut at {RAW_BLOB_MAX} bytes")
    return valid


def verify(
    kernel: Kernel,
    task_id: str,
    *,
    actor: str | None = None,
    claims: list[str] | None = None,
    contracts: list[str] | None = None,
    ack_drift: bool = False,
    no_op: bool = False,
) -> Result:
    """Run the plan's verifiers once and commit the batch (see the module docstring)."""
    from cortex.verifiers.registry import resolve

    store = kernel.writable(task_id)
    case, documents = store.read_view(task_id)
    old = documents.get("verification.json") or Verification()
    _check_phase(case)
    if case.workspace.root != kernel.workspace.root:
        msg = f"case {task_id} belongs to the worktree {case.workspace.root}; verify from there"
        raise InvalidInputError(msg)
    who = _lease_actor(kernel, case, actor)
    required = list(case.verification_required)
    wanted = parse_claims(kernel, claims or [], contracts or [], required)
    _check_claims(kernel, case, wanted, old)
    verifiers = [(requirement, resolve(requirement)) for requirement in required]
    started_at = kernel.now()
    start = live_capture(kernel, case)
    changed = _changed_files(kernel, case, start)
    _gates(case, changed, no_op=no_op, ack_drift=ack_drift)
    context = Context(
        root=case.workspace.root,
        env=kernel.env,
        case=case,
        start=start,
        verifiers=kernel.config.verifiers,
        approve=_approver(kernel, case.workspace.root),
        changed=changed,
        ack_drift=ack_drift,
    )
    problems = [p for r, v in verifiers if (p := _check(r, v, context)) is not None]
    if problems:
        raise InvalidInputError("; ".join(problems))
    lease_before = _lease_identity(kernel, case)
    runs = _run_all(verifiers, context)

    with store.transaction(task_id, actor=who, operation="case.verify") as txn:
        _check_phase(txn.case)
        require_lease_holder(txn, who, kernel, doing="verify", required=case.mode == "change")
        end = live_capture(kernel, txn.case)
        reasons = _binding_reasons(start, end, case.revision, txn.case.revision)
        if _plan_digest(txn.case) != _plan_digest(case):
            reasons.append("the plan changed during the run")
        if txn.case.revision != case.revision and _only_renewals(store, case, txn.case):
            # The holder renewing its lease during a long run changes nothing the run depends on.
            reasons = [r for r in reasons if not r.startswith("the case changed")]
        if _lease_identity(kernel, txn.case) != lease_before:
            reasons.append("the change lease changed during the run")
        batch = Batch(
            id=new_id("vb"),
            actor=who,
            started_at=started_at,
            finished_at=kernel.now(),
            binding="unbound" if reasons else "bound",
            reasons=reasons,
            revision=end.head if end.bound else start.head,
            dirty_digest=end.digest if end.bound else start.digest,
            branch=end.branch or start.branch,
            case_revision=case.revision,
            lease_actor=lease_before[0] if lease_before else None,
            plan_sha256=_plan_digest(txn.case),
            acknowledged=[name for name, on in (("no-op", no_op), ("drift", ack_drift)) if on],
        )
        receipts = _stage_runs(txn, batch, runs, wanted)
        doc = txn.snapshot("verification.json", Verification) or Verification()
        _check_claims(kernel, txn.case, wanted, doc)  # a concurrent batch may have used an id
        doc.batches.append(batch)
        doc.receipts.extend(receipts)
        for claim in wanted:
            doc.claims.setdefault(
                claim.id,
                ClaimTerms(statement=kernel.redactor(claim.statement), contract=claim.contract),
            )
        _trim(doc)
        txn.stage_snapshot("verification.json", doc)
        if txn.case.status != "verifying":
            lifecycle.move(
                txn, "verifying", actor=who, now=kernel.now(), reason=f"batch {batch.id}"
            )
        txn.target = batch.id
    committed = txn.outcome
    assessment = assess(committed, doc, end)
    warnings = [w for w in (start.warning, end.warning) if w] + txn.warnings
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "status": committed.status,
            "batch": batch,
            "receipts": receipts,
            "assessment": assessment,
            "warnings": warnings,
        },
        actions=_actions(committed, assessment.status),
    )


def _plan_digest(case: CaseFile) -> str | None:
    ref = case.snapshots.get("plan")
    return None if ref is None else ref.sha256


def _only_renewals(store: CaseStore, before: CaseFile, now: CaseFile) -> bool:
    """Whether every commit between two revisions was a `lease renew` (read from the audit)."""
    from cortex.cases.layout import ledger_file
    from cortex.cases.records import Command, decode

    start = (before.ledgers.get("commands") or LedgerState()).bytes
    end = (now.ledgers.get("commands") or LedgerState()).bytes
    if end - start > LEDGER_RECORD_MAX * 64:
        return False
    path = os.path.join(store.case_path(now.id), ledger_file("commands"))
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    lines = data.splitlines()
    if len(lines) != now.revision - before.revision:
        return False
    try:
        operations = {decode(line, Command).operation for line in lines}
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return operations == {"case.lease.renew"}


def _binding_reasons(start: Capture, end: Capture, before: int, now: int) -> list[str]:
    reasons: list[str] = []
    for label, snap in (("before the verifiers", start), ("at commit", end)):
        if not snap.bound:
            reasons.append(f"no code state {label}: {snap.reason}")
    if start.bound and end.bound:
        if start.head != end.head:
            reasons.append(f"HEAD moved during the run ({start.head} -> {end.head})")
        elif start.digest != end.digest:
            reasons.append("the work tree changed during the run")
    if before != now:
        reasons.append(f"the case changed during the run (revision {before} -> {now})")
    return reasons


def _stage_runs(txn: object, batch: Batch, runs: list[_Run], claims: list[Claim]) -> list[Receipt]:
    from cortex.cases.txn import Transaction

    assert isinstance(txn, Transaction)  # noqa: S101 - typed loosely to keep imports lazy
    now = batch.finished_at
    receipts: list[Receipt] = []
    statuses: dict[str, tuple[Outcome, list[str]]] = {}
    for run in runs:
        outcome = run.outcome
        evidence_ids: list[str] = []
        artifact = None
        sensitive = False
        digest = None
        if outcome.raw is not None:
            raw_id = new_id("raw")
            stored, sensitive = txn.stage_blob(raw_name(raw_id), outcome.raw)
            artifact = raw_ref(txn.task_id, raw_id)
            digest = sha256_hex(stored)
        status = _bind(outcome.status, batch)
        run_evidence = txn.append(
            "evidence",
            Evidence(
                id=new_id("ev"),
                timestamp=now,
                kind=outcome.evidence_kind,
                source=Source(tool=f"cortex-verify:{run.requirement}", actor=batch.actor),
                claim=f"[{status}] {outcome.summary}",
                confidence="high" if batch.binding == "bound" else "low",
                sensitivity="sensitive" if sensitive else "normal",
                raw_ref=artifact,
                raw_sha256=digest,
            ),
        )
        evidence_ids.append(run_evidence.id)
        for finding in outcome.findings:
            record = txn.append(
                "evidence",
                Evidence(
                    id=new_id("ev"),
                    timestamp=now,
                    kind=finding.kind,
                    source=Source(tool=f"cortex-verify:{run.requirement}", actor=batch.actor),
                    claim=finding.claim,
                    confidence=finding.confidence,
                    derived_from=[run_evidence.id],
                ),
            )
            evidence_ids.append(record.id)
        statuses[run.requirement] = (outcome, evidence_ids)
        receipts.append(
            _receipt(
                batch,
                purpose="verifier_run",
                requirement=run.requirement,
                claim=outcome.summary,
                tool=run.verifier.kind,
                version=run.verifier.version,
                status=status,
                evidence=evidence_ids,
                artifact=artifact,
                sensitive=sensitive,
                notes=[*outcome.notes, *_unbound_notes(outcome.status, status, batch)],
            )
        )
    for claim in claims:
        found = statuses.get(claim.requirement)
        if found is None:
            raw_status: ReceiptStatus = "not_run"
            evidence: list[str] = []
            notes = [f"{claim.requirement} did not run in this batch"]
        else:
            outcome, evidence = found
            if claim.selector is None:
                raw_status = outcome.status
                notes = []
            else:
                raw_status = outcome.contracts.get(claim.selector, "not_run")
                notes = (
                    []
                    if claim.selector in outcome.contracts
                    else [f"{claim.requirement} did not report {claim.selector!r}"]
                )
        status = _bind(raw_status, batch)
        receipts.append(
            _receipt(
                batch,
                purpose="named_claim",
                requirement=claim.requirement,
                claim=claim.statement,
                claim_id=claim.id,
                contract=claim.contract,
                tool=split(claim.requirement)[0],
                status=status,
                evidence=evidence,
                notes=[*notes, *_unbound_notes(raw_status, status, batch)],
            )
        )
    if not receipts:
        receipts.append(
            _receipt(
                batch,
                purpose="marker",
                claim="no verifier ran and no claim was made in this batch",
                tool="cortex",
                status="not_run",
                notes=["the plan requires no verifier; this marker masks any older proof"],
            )
        )
    return receipts


def _bind(status: ReceiptStatus, batch: Batch) -> ReceiptStatus:
    """An unbound batch cannot show that anything passed or failed on known code."""
    if batch.binding == "unbound" and status in ("passed", "failed"):
        return "inconclusive"
    return status


def _unbound_notes(raw: ReceiptStatus, status: ReceiptStatus, batch: Batch) -> list[str]:
    if raw == status:
        return []
    return [f"{raw} on code that was not stable during the run: " + "; ".join(batch.reasons)]


def _receipt(
    batch: Batch,
    *,
    purpose: str,
    claim: str,
    tool: str,
    status: ReceiptStatus,
    requirement: str | None = None,
    claim_id: str | None = None,
    contract: str | None = None,
    version: str | None = None,
    evidence: list[str] | None = None,
    artifact: str | None = None,
    sensitive: bool = False,
    notes: list[str] | None = None,
) -> Receipt:
    return Receipt(
        id=new_id("vr"),
        batch_id=batch.id,
        purpose=purpose,  # type: ignore[arg-type]
        requirement=requirement,
        claim=claim,
        claim_id=claim_id,
        contract=contract,
        actor=batch.actor,
        tool=tool,
        verifier_version=version,
        status=status,
        evidence=evidence or [],
        artifact=artifact,
        sensitive=sensitive,
        notes=notes or [],
        revision=batch.revision,
        dirty_digest=batch.dirty_digest,
        binding=batch.binding,
        timestamp=batch.finished_at,
    )


def _trim(doc: Verification) -> None:
    if len(doc.batches) <= BATCHES_KEPT:
        return
    doc.batches = doc.batches[-BATCHES_KEPT:]
    kept = {b.id for b in doc.batches}
    doc.receipts = [r for r in doc.receipts if r.batch_id in kept]


def _actions(case: CaseFile, verdict: str) -> list[Action]:
    task = case.id
    if verdict == "verified":
        return [
            Action(
                command=f"cortex case complete {task} --outcome '<what was done>'",
                reason="every requirement has a current, bound pass",
            )
        ]
    actions = []
    if case.mode == "change":
        actions.append(
            Action(
                command=f"cortex case begin-change {task} --actor <you>",
                reason="repair what failed, then verify again",
            )
        )
    actions.append(Action(command=f"cortex case verify {task}", reason="run the batch again"))
    flag = "--accept-failed" if verdict == "failed" else "--verification-not-possible"
    actions.append(
        Action(
            command=f"cortex case complete {task} --outcome '<what was done>' {flag} '<why>'",
            reason="finish without full proof, on record",
        )
    )
    return actions
