"""`cortex case verify`: one call, one batch of receipts bound to the code they ran on.

Steps and why each exists are in docs/design/verification.md §3. In short: capture the
workspace, run the plan's verifiers without holding the case lock, then under the lock capture
again and commit every output of the run together; the batch is bound only if nothing moved.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from cortex.cases.bounds import (
    CLAIM_ID_MAX,
    CLAIM_REGISTRY_MAX,
    CLAIM_STATEMENT_MAX,
    CLAIMS_MAX,
    CONTRACT_MAX,
    LEDGER_RECORD_MAX,
    SUMMARY_MAX,
)
from cortex.cases.documents import Batch, ClaimTerms, Verification
from cortex.cases.errors import ArgumentError, CortexError, InvalidInputError, naming
from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile
from cortex.cases.redact import clip
from cortex.cases.store import CaseStore, monotonic_ms
from cortex.kernel import lifecycle, validate
from cortex.kernel.envelope import NOT_VERIFIED, Result, step
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.inputs import ClaimArg, Holder, Input, LeaseToken, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import check_holder, in_session, require_lease_holder, state
from cortex.kernel.progress import Progress
from cortex.kernel.proof.assessment import Assessment, assess
from cortex.kernel.proof.live import changed_files, live_capture
from cortex.kernel.proof.receipts import Claim, Run, stage_runs, trim
from cortex.verifiers.base import Context, Outcome, Verifier, validated
from cortex.verifiers.config import definition_digest
from cortex.verifiers.runner import Cancelled
from cortex.workspace.capture import Capture

_CLAIM_ID = re.compile(r"[A-Za-z0-9_-]{1,%d}" % CLAIM_ID_MAX)  # noqa: UP031


def stop_running() -> None:
    """Kill every verifier process group still running (a face's signal handler calls this)."""
    from cortex.verifiers.runner import kill_running

    kill_running()


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
            msg = "{claim} must be ID=STATEMENT with an id of letters, digits, _ and -, "
            msg += f"not {spec!r}"
            raise ArgumentError(clip(msg, 400), "claim")
        if claim_id in statements:
            raise ArgumentError(f"{{claim}} {claim_id} is given twice", "claim")
        if kernel.redactor.looks_secret(claim_id):
            raise InvalidInputError("a claim id looks like a secret; name the claim instead")
        statements[claim_id] = validate.text(statement, f"claim {claim_id}", CLAIM_STATEMENT_MAX)
    mapped: dict[str, tuple[str, str | None]] = {}
    for spec in contracts:
        claim_id, sep, contract = spec.partition("=")
        if not sep or claim_id not in statements:
            msg = "{contract} must be ID=REQUIREMENT for a claim given with {claim}, "
            msg += f"not {spec!r}"
            raise ArgumentError(clip(msg, 400), "contract", "claim")
        if claim_id in mapped:
            raise ArgumentError(f"{{contract}} {claim_id} is given twice", "contract")
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
        msg = f"each claim needs {{contract}} ID=REQUIREMENT naming what proves it: {missing[0]}"
        raise ArgumentError(msg, "contract")
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
                f"exactly: {clip(criteria[claim.id], 300)!r}"
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


def _lease_actor(kernel: Kernel, case: CaseFile, actor: str | None, token: str | None) -> str:
    """The verify actor: the one given, else the active lease's holder, else the default.

    While the lease is active only its holder verifies: its name, with its token.
    """
    lease = case.change_lease
    active = lease is not None and state(lease, kernel.clock()) == "active"
    who = lease.actor if actor is None and active and lease is not None else kernel.actor(actor)
    if active and lease is not None and lease.actor != who:
        msg = f"the change lease is held by {lease.actor} until {lease.expires_at}; "
        msg += "only its holder verifies while it is held"
        raise LeaseConflictError(msg)
    check_holder(lease, who, token, kernel.clock(), session=in_session(kernel, case.id, lease))
    if case.mode == "change" and not active:
        msg = "verifying a change needs an active change lease (it expired or was released); "
        msg += "take it again, then verify"
        again = step("case.begin-change", "take the lease", task=case.id, actor=who)
        raise LeaseConflictError(msg, [again])
    return who


def _lease_identity(kernel: Kernel, case: CaseFile) -> tuple[str, str] | None:
    lease = case.change_lease
    if lease is None or state(lease, kernel.clock()) != "active":
        return None
    return lease.actor, lease.acquired_at


def _gates(case: CaseFile, changed: list[str] | None, *, no_op: bool, ack_drift: bool) -> None:
    if case.mode != "change" or changed is None:
        return
    if not changed and not no_op:
        msg = "the work tree has no changes since the case was opened; a change task with "
        msg += "nothing to change needs {no_op}"
        refusal = GateRefusedError(
            msg, [step("case.verify", "no change", task=case.id, no_op=True)]
        )
        raise naming(refusal, "no_op")
    boundary = case.change_boundary.files
    if case.risk == "high" and boundary and not ack_drift:
        from cortex.verifiers.scope import drift

        outside = drift(changed, boundary)
        if outside:
            msg = f"a high-risk change touched {len(outside)} file(s) outside its boundary "
            msg += f"({', '.join(outside[:5])}); re-plan the boundary or pass {{ack_drift}}"
            accept = step("case.verify", "accept the drift on record", task=case.id, ack_drift=True)
            raise naming(GateRefusedError(msg, [accept]), "ack_drift")


def _approver(kernel: Kernel, root: str):  # type: ignore[no-untyped-def]  # noqa: ANN202
    from cortex.kernel.proof import grants

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


def _run_all(
    kernel: Kernel,
    verifiers: list[tuple[str, Verifier]],
    context: Context,
    progress: Progress,
    runs: list[Run],
) -> list[Run]:
    """Run each verifier in turn, appending to `runs` (so a stop knows how far it got)."""
    for index, (requirement, verifier) in enumerate(verifiers, start=1):
        watch = None
        if progress.active:
            watch = progress.verifier(
                requirement,
                index=index,
                count=len(verifiers),
                timeout=_timeout(kernel, requirement),
                redactor=kernel.redactor,
            )
            context.watch = watch
        try:
            outcome = validated(verifier.run(requirement, context))
        except Exception as exc:  # noqa: BLE001 - a broken verifier blocks, it does not crash us
            outcome = Outcome(
                status="blocked",
                summary=f"{requirement}: the verifier failed ({type(exc).__name__})",
                notes=[clip(str(exc), 500)],
            )
        if watch is not None:
            watch.finish(outcome.status)
        definition = definition_digest(requirement, context.verifiers)
        runs.append(
            Run(requirement=requirement, verifier=verifier, outcome=outcome, definition=definition)
        )
    return runs


def _timeout(kernel: Kernel, requirement: str) -> float | None:
    """How long a built-in command verifier may run, for the progress channel (else None)."""
    from cortex.cases.bounds import VERIFIER_TIMEOUT_DEFAULT
    from cortex.verifiers.base import split

    kind, name = split(requirement)
    if kind not in {"command", "pytest"}:
        return None
    config = kernel.config.verifiers.get(name or "pytest")
    if config is not None:
        return config.timeout
    return VERIFIER_TIMEOUT_DEFAULT if kind == "pytest" else None


def verify(
    kernel: Kernel,
    task_id: str,
    *,
    actor: str | None = None,
    claims: list[str] | None = None,
    contracts: list[str] | None = None,
    ack_drift: bool = False,
    no_op: bool = False,
    lease_token: str | None = None,
) -> Result:
    """Run the plan's verifiers once and commit the batch (see the module docstring)."""
    from cortex.verifiers.registry import resolve

    progress = kernel.progress or Progress()
    began = monotonic_ms()  # the audit line's duration covers the verifiers' run

    task_id, store = kernel.find_writable(task_id)
    case, documents = store.read_view(task_id)
    old = documents.get("verification.json") or Verification()
    _check_phase(case)
    if case.workspace.root != kernel.workspace.root:
        msg = f"case {task_id} belongs to the worktree {case.workspace.root}; verify from there"
        raise InvalidInputError(msg)
    who = _lease_actor(kernel, case, kernel.acting(actor), lease_token)
    required = list(case.verification_required)
    wanted = parse_claims(kernel, claims or [], contracts or [], required)
    _check_claims(kernel, case, wanted, old)
    verifiers = [(requirement, resolve(requirement)) for requirement in required]
    progress.begin("case.verify", count=len(verifiers))
    progress.step("capture")
    started_at = kernel.now()
    start = live_capture(kernel, case)
    changed = changed_files(kernel, case, start)
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
    runs: list[Run] = []
    try:
        _run_all(kernel, verifiers, context, progress, runs)
        progress.step("commit")  # the last moment a cancelled request stops the run unwritten
    except Cancelled as stop:
        stop.message = _record_cancellation(
            kernel, task_id, who, [r for r, _ in verifiers], len(runs), monotonic_ms() - began
        )
        raise

    with store.transaction(task_id, actor=who, operation="case.verify", started_ms=began) as txn:
        _check_phase(txn.case)
        require_lease_holder(
            txn, who, kernel, doing="verify", required=case.mode == "change", token=lease_token
        )
        end = live_capture(kernel, txn.case, same_as=start)
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
            tree=end.tree if end.bound else start.tree,
            head_tree=end.head_tree if end.bound else start.head_tree,
            branch=end.branch or start.branch,
            case_revision=case.revision,
            lease_actor=lease_before[0] if lease_before else None,
            plan_sha256=_plan_digest(txn.case),
            acknowledged=[name for name, on in (("no-op", no_op), ("drift", ack_drift)) if on],
        )
        receipts = stage_runs(txn, batch, runs, wanted)
        doc = txn.snapshot("verification.json", Verification) or Verification()
        _check_claims(kernel, txn.case, wanted, doc)  # a concurrent batch may have used an id
        doc.batches.append(batch)
        doc.receipts.extend(receipts)
        for claim in wanted:
            doc.claims.setdefault(
                claim.id,
                ClaimTerms(statement=kernel.redactor(claim.statement), contract=claim.contract),
            )
        trim(doc)
        txn.stage_snapshot("verification.json", doc)
        if txn.case.status != "verifying":
            lifecycle.move(
                txn, "verifying", actor=who, now=kernel.now(), reason=f"batch {batch.id}"
            )
        txn.target = batch.id
    committed = txn.outcome
    progress.end()
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
        actions=[
            action
            for action in lifecycle.next_actions(
                committed, standing=_standing(kernel, committed, assessment, end, doc)
            )
            if action.operation in _PROOF_STEPS
        ],
        exit_status=0 if assessment.status == "verified" else NOT_VERIFIED,
    )


def _record_cancellation(  # noqa: PLR0917
    kernel: Kernel, task_id: str, who: str, required: list[str], done: int, elapsed_ms: int
) -> str:
    """Leave a trace of a verify its caller stopped: a note, and no receipt (issue 29).

    The stop itself writes no batch (docs/design/progress.md); the note says what ran and what
    was stopped, so the timeline shows the attempt. Returns the message the caller is given; if
    the note cannot be written (the case closed meanwhile, the lock busy), it says so.
    """
    from cortex.kernel.steps.evidence import add_evidence

    seconds = elapsed_ms / 1000
    if done < len(required):
        where = f"while {required[done]} ({done + 1} of {len(required)}) ran"
    else:
        where = "before its batch was committed"
    claim = (
        f"verify cancelled by its caller after {seconds:.1f} s, {where}; its process group was "
        "stopped and no receipt was recorded"
    )
    base = "cancelled: the verifier's process group was stopped and no receipt was written"
    try:
        result = add_evidence(
            kernel,
            task_id,
            claim=claim,
            kind="note",
            tool="cortex",
            origin="tool",
            actor=who,
            operation="case.verify",
        )
    except CortexError as exc:
        return f"{base}; the cancellation could not be recorded ({exc.message})"
    return f"{base}; the cancellation is recorded as {result.data['evidence'].id}"


_PROOF_STEPS = frozenset({"case.complete", "case.verify", "case.begin-change"})
"""What verify's answer offers: the steps its result calls for (status lists every step)."""


def _plan_digest(case: CaseFile) -> str | None:
    ref = case.snapshots.get("plan")
    return None if ref is None else ref.sha256


def _only_renewals(store: CaseStore, before: CaseFile, now: CaseFile) -> bool:
    """Whether every commit between two revisions was a `lease renew` (read from the audit)."""
    from cortex.cases.records import Command, decode

    lines = store.ledger_lines_between(before, now, "commands", limit=LEDGER_RECORD_MAX * 64)
    if lines is None or len(lines) != now.revision - before.revision:
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
        elif start.tree != end.tree:
            # The digest is stricter within one HEAD, but the tree is what currency is judged by.
            reasons.append(
                f"the tree id changed during the run ({start.tree or start.tree_reason} -> "
                f"{end.tree or end.tree_reason})"
            )
    if before != now:
        reasons.append(f"the case changed during the run (revision {before} -> {now})")
    return reasons


def _standing(
    kernel: Kernel, case: CaseFile, assessment: Assessment, end: Capture, doc: Verification
) -> lifecycle.Standing:
    """What the gates will judge after this batch, so the next steps offered are accepted."""
    lease = case.change_lease
    return lifecycle.Standing(
        assessment=assessment,
        lease=state(lease, kernel.clock()),
        holder=lease.actor if lease is not None else None,
        changed=changed_files(kernel, case, end) if case.mode == "change" else None,
        contracts={key: terms.contract for key, terms in doc.claims.items()},
    )


class Verify(Input):
    """The input of `case verify`."""

    task_id: TaskId
    claims: Annotated[
        list[str | ClaimArg],
        msgspec.Meta(description="named claims, each {id, statement, contract} or 'ID=STATEMENT'"),
    ] = msgspec.field(default_factory=list)
    contracts: Annotated[
        list[str], msgspec.Meta(description="what each claim rests on, 'ID=REQUIREMENT[#SEL]'")
    ] = msgspec.field(default_factory=list)
    ack_drift: bool = False
    no_op: bool = False
    actor: Holder = None
    lease_token: LeaseToken = None


def verify_case(kernel: Kernel, given: Verify) -> Result:
    """`verify` for one input; progress goes to `kernel.progress`, the face's sink.

    A claim id has no `=`, so an object claim is the shorthand exactly.
    """
    claims = [c if isinstance(c, str) else f"{c.id}={c.statement}" for c in given.claims]
    contracts = [f"{c.id}={c.contract}" for c in given.claims if isinstance(c, ClaimArg)]
    return verify(
        kernel,
        given.task_id,
        actor=given.actor,
        claims=claims,
        contracts=[*contracts, *given.contracts],
        ack_drift=given.ack_drift,
        no_op=given.no_op,
        lease_token=given.lease_token,
    )
