"""`cortex case plan`: the planning gate (docs/design/lifecycle.md, "The plan gate").

A plan names falsifiable hypotheses with how each could be disproved, the evidence behind them,
the change boundary, the verifiers that must pass and what is still uncertain. Everything is
committed together: plan.json, hypotheses.json, a `plan` evidence record whose raw blob is the
whole plan (so earlier plans stay readable in the chained ledger), the phase and the case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from cortex.cases.bounds import (
    BOUNDARY_ENTRIES_MAX,
    HYPOTHESES_MAX,
    HYPOTHESIS_TEXT_MAX,
    INTEGER_DIGITS_MAX,
    REASON_MAX,
    SUPPORTS_MAX,
    SYMBOL_MAX,
    VERIFIERS_MAX,
)
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Hypotheses, Hypothesis, Plan
from cortex.cases.errors import ArgumentError, InvalidInputError, NotFoundError, naming
from cortex.cases.ids import new_id
from cortex.cases.layout import raw_name, raw_ref
from cortex.cases.records import ChangeBoundary, Evidence, Source, encode_pretty
from cortex.cases.scrub import scrub_value
from cortex.kernel import lifecycle, refs, validate
from cortex.kernel.envelope import Result, step
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Expect, HypothesisArg, Input, LeaseToken, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import require_lease_holder
from cortex.verifiers.config import REQUIREMENT


class _Draft(msgspec.Struct):
    """A hypothesis as given on the command line, before it has an id."""

    statement: str
    disproof: str | None
    supports: list[str]


def _hypotheses(specs: Sequence[str | tuple[str, str]], supports: list[str]) -> list[_Draft]:
    if len(specs) > HYPOTHESES_MAX:
        raise InvalidInputError(f"at most {HYPOTHESES_MAX} hypotheses")
    drafts = []
    for index, spec in enumerate(specs, 1):
        # The shorthand 'statement :: disproof', or the two already apart (an MCP object).
        statement, sep, disproof = (
            spec.partition("::") if isinstance(spec, str) else (spec[0], "::", spec[1])
        )
        field = f"hypothesis {index}"
        drafts.append(
            _Draft(
                statement=validate.text(statement, field, HYPOTHESIS_TEXT_MAX),
                disproof=(
                    validate.text(disproof, f"{field} disproof", HYPOTHESIS_TEXT_MAX)
                    if sep and disproof.strip()
                    else None
                ),
                supports=[],
            )
        )
    for spec in supports:
        index_text, sep, ids = spec.partition("=")
        index_text = index_text.strip()
        # ASCII only: isdigit() alone admits `²`, which int() then refuses with a ValueError.
        if not sep or not (index_text.isascii() and index_text.isdigit()):
            raise ArgumentError(
                f"{{support}} must be HYPOTHESIS_INDEX=ev_...,ev_..., not {spec!r}", "support"
            )
        if len(index_text) > INTEGER_DIGITS_MAX:  # counted before int() converts it
            digits = len(index_text)
            msg = f"{{support}} index must be at most {INTEGER_DIGITS_MAX} digits, not {digits}"
            raise ArgumentError(msg, "support")
        index = int(index_text)
        if not 1 <= index <= len(drafts):
            raise ArgumentError(
                f"{{support}} names hypothesis {index}, which is not given", "support"
            )
        chosen = [
            refs.check(i.strip(), "ev", what="--support id") for i in ids.split(",") if i.strip()
        ]
        target = drafts[index - 1].supports
        target.extend(i for i in chosen if i not in target)
        if len(target) > SUPPORTS_MAX:
            raise InvalidInputError(f"at most {SUPPORTS_MAX} supporting ids per hypothesis")
    return drafts


def _boundary(
    kernel: Kernel, files: list[str], symbols: list[str], reason: str | None
) -> ChangeBoundary:
    if len(files) + len(symbols) > BOUNDARY_ENTRIES_MAX:
        raise InvalidInputError(f"at most {BOUNDARY_ENTRIES_MAX} boundary files and symbols")
    return ChangeBoundary(
        files=list(
            dict.fromkeys(validate.location_path(f, kernel.redactor, directory=True) for f in files)
        ),
        symbols=list(
            dict.fromkeys(validate.short_text(s, "--symbol", SYMBOL_MAX) for s in symbols)
        ),
        reason=None if reason is None else validate.text(reason, "--boundary-reason", REASON_MAX),
    )


def _verifiers(names: list[str]) -> list[str]:
    if len(names) > VERIFIERS_MAX:
        raise InvalidInputError(f"at most {VERIFIERS_MAX} verifiers")
    for name in names:
        if not REQUIREMENT.fullmatch(name):
            msg = f"{{verify}} {name!r} is not a verifier name (like pytest, scope or command:unit)"
            raise ArgumentError(msg, "verify")
    return list(dict.fromkeys(names))


def plan(
    kernel: Kernel,
    task_id: str,
    *,
    hypotheses: Sequence[str | tuple[str, str]],
    supports: list[str] | None = None,
    files: list[str] | None = None,
    symbols: list[str] | None = None,
    boundary_reason: str | None = None,
    verify: list[str] | None = None,
    uncertainty: str | None = None,
    reason: str | None = None,
    actor: str | None = None,
    expected_revision: int | None = None,
    lease_token: str | None = None,
) -> Result:
    """Commit a plan (or a new plan revision) for a case.

    Moving the boundary while the change lease is active takes its holder (with its token).
    """
    drafts = _hypotheses(hypotheses, supports or [])
    boundary = _boundary(kernel, files or [], symbols or [], boundary_reason)
    verifiers = _verifiers(verify or [])
    if uncertainty is not None:
        uncertainty = (
            validate.text(uncertainty, "--uncertainty", REASON_MAX, required=False) or None
        )
    if reason is not None:
        reason = validate.text(reason, "--reason", REASON_MAX, required=False) or None
    who = kernel.actor(actor)
    task_id, store = kernel.find_writable(task_id)
    now = kernel.now()

    with store.transaction(
        task_id, actor=who, operation="case.plan", expected_revision=expected_revision
    ) as txn:
        case = txn.case
        previous = txn.snapshot("plan.json", Plan)
        where = case.paused_from if case.status == lifecycle.PAUSED else case.status
        if case.status in lifecycle.TERMINAL or (
            previous is None and where in {"new", "orienting"}
        ):
            raise lifecycle.refusal(
                case, "cannot plan yet" if previous is None else "cannot re-plan", txn=txn
            )
        missing = _missing(
            case.mode,
            drafts,
            boundary=boundary,
            verifiers=verifiers,
            uncertainty=uncertainty,
            previous=previous,
            reason=reason,
        )
        if missing:
            refusal = GateRefusedError(
                "the plan is missing: " + "; ".join(missing), lifecycle.actions_for(txn)
            )
            arguments = ("hypothesis", "uncertainty", "file", "symbol", "boundary_reason")
            raise naming(refusal, *arguments, "verify", "reason")
        for draft in drafts:
            # Prefixes made whole against this case's evidence (exit 3 or 4 if they cannot be).
            draft.supports = refs.evidence(store, case, draft.supports, argument="support")
        cited = sorted({i for d in drafts for i in d.supports})
        known = store.find_records(case, "evidence", cited)
        absent = [i for i in cited if i not in known]
        if absent:
            raise naming(
                NotFoundError(f"{{support}} names evidence not in this case: {absent}"), "support"
            )
        if boundary != case.change_boundary:
            # Moving the boundary under someone's active lease needs that someone.
            require_lease_holder(
                txn, who, kernel, doing="change the boundary", required=False, token=lease_token
            )

        revision = 1 if previous is None else previous.plan_revision + 1
        old = txn.snapshot("hypotheses.json", Hypotheses) or Hypotheses()
        for hypothesis in old.hypotheses:
            hypothesis.retired = True
        fresh = [
            Hypothesis(
                id=new_id("hyp"),
                statement=d.statement,
                disproof=d.disproof or "",
                supports=d.supports,
                plan_revision=revision,
            )
            for d in drafts
        ]
        evidence_id = new_id("ev")
        document = Plan(
            plan_revision=revision,
            created_at=now,
            actor=who,
            reason=reason,
            hypotheses=[h.id for h in fresh],
            change_boundary=boundary,
            verification_required=verifiers,
            uncertainty=uncertainty or "",
            evidence_id=evidence_id,
        )
        # The full plan, hypotheses included, as one blob: the history of plans lives in the
        # append-only ledger rather than in a snapshot that grows with every re-plan. It is
        # built from the values as the snapshots will store them, redacted one by one
        # (docs/design/redaction.md, "Derived artifacts"); the store redacts the blob again.
        whole = {"plan": document, "hypotheses": fresh}
        clean = scrub_value(whole, kernel.redactor)
        raw_id = new_id("raw")
        stored, redacted = txn.stage_blob(raw_name(raw_id), encode_pretty(clean))
        redacted = redacted or clean is not whole
        claim = (
            f"Plan revision {revision}: {len(fresh)} hypothes{'is' if len(fresh) == 1 else 'es'}"
        )
        if reason:
            claim += f" (re-plan: {reason})"
        txn.append(
            "evidence",
            Evidence(
                id=evidence_id,
                timestamp=now,
                kind="plan",
                source=Source(tool="cortex", actor=who, origin="agent"),
                claim=claim,
                confidence="unknown",
                sensitivity="sensitive" if redacted else "normal",
                raw_ref=raw_ref(task_id, raw_id),
                raw_sha256=sha256_hex(stored),
                derived_from=cited[:64],
            ),
        )
        txn.stage_snapshot("plan.json", document)
        txn.stage_snapshot("hypotheses.json", Hypotheses(hypotheses=[*old.hypotheses, *fresh]))
        case.change_boundary = boundary
        case.verification_required = verifiers
        if case.status == "investigating":
            lifecycle.move(txn, "planned", actor=who, now=now)
        elif case.status == lifecycle.PAUSED and case.paused_from == "investigating":
            case.paused_from = "planned"
        txn.target = evidence_id
    committed = txn.outcome
    earlier, warnings = _rejected_before(kernel, task_id, fresh)
    from cortex.kernel.proof.will_run import warnings_for, will_run

    runs = [run for r in verifiers if (run := will_run(kernel, r)) is not None]
    warnings += warnings_for(runs)
    trust = [
        step("case.trust", "a person approves it at a terminal, once per machine", name=run.name)
        for run in runs
        if not run.approved
    ]
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "status": committed.status,
            "planRevision": revision,
            "evidenceId": evidence_id,
            "hypotheses": fresh,
            "changeBoundary": boundary,
            "verificationRequired": verifiers,
            "uncertainty": uncertainty,
            "rejectedBefore": earlier,
            "verifiers": runs,
            "warnings": warnings,
        },
        actions=[*trust, *lifecycle.next_actions(committed)],
    )


def _rejected_before(
    kernel: Kernel, task_id: str, fresh: list[Hypothesis]
) -> tuple[list[dict[str, object]], list[str]]:
    """Each new hypothesis that repeats one an earlier case of this repository rejected.

    A warning, never a refusal: the plan is committed (docs/design/recall.md, "The plan warning").
    """
    from cortex.kernel.recall import rejected_matches, shown

    matches = rejected_matches(kernel, task_id, [h.statement for h in fresh])
    cards = shown(kernel, [hit for _, _, hit in matches])
    earlier: list[dict[str, object]] = []
    warnings: list[str] = []
    for (number, similarity, _), card in zip(matches, cards, strict=True):
        hypothesis = fresh[number - 1]
        earlier.append(
            {
                "hypothesis": number,
                "hypothesisId": hypothesis.id,
                "overlap": round(similarity, 3),
                "card": card,
            }
        )
        warnings.append(
            f"hypothesis {number} ({hypothesis.id}) matches {card.id}, which {card.task_id} "
            f"rejected: {card.text}"
        )
    return earlier, warnings


def _missing(
    mode: str,
    drafts: list[_Draft],
    *,
    boundary: ChangeBoundary,
    verifiers: list[str],
    uncertainty: str | None,
    previous: Plan | None,
    reason: str | None,
) -> list[str]:
    """Every required piece that is absent, named so the caller can add them all at once."""
    missing = []
    if not drafts:
        missing.append("at least one {hypothesis} 'statement :: how to disprove it'")
    missing.extend(
        f"a disproof path for hypothesis {i} (write it after ' :: ')"
        for i, d in enumerate(drafts, 1)
        if d.disproof is None
    )
    if not uncertainty:
        missing.append("{uncertainty} (what is still unknown)")
    if mode == "change":
        if not boundary.files and not boundary.symbols:
            missing.append("a change boundary ({file} and/or {symbol})")
        if not boundary.reason:
            missing.append("{boundary_reason}")
        if not verifiers:
            missing.append("at least one {verify} verifier")
    if previous is not None and not reason:
        missing.append("{reason} (why the plan changes)")
    return missing


class PlanArgs(Input):
    """The input of `case plan`."""

    task_id: TaskId
    hypotheses: Annotated[
        list[str | HypothesisArg],
        msgspec.Meta(
            description="each {statement, disproof, supports} or 'statement :: how to disprove it'"
        ),
    ] = msgspec.field(default_factory=list)
    supports: Annotated[
        list[str], msgspec.Meta(description="evidence behind hypothesis N, 'N=EV,...'")
    ] = msgspec.field(default_factory=list)
    files: Annotated[
        list[str], msgspec.Meta(description="files the change may touch; 'dir/' covers a tree")
    ] = msgspec.field(default_factory=list)
    symbols: list[str] = msgspec.field(default_factory=list)
    boundary_reason: str | None = None
    verify: Annotated[
        list[str], msgspec.Meta(description="verifiers that must pass: pytest, command:NAME, ...")
    ] = msgspec.field(default_factory=list)
    uncertainty: str | None = None
    reason: Annotated[
        str | None, msgspec.Meta(description="why the plan changes (required to re-plan)")
    ] = None
    actor: Actor = None
    expect_revision: Expect = None
    lease_token: LeaseToken = None


def plan_case(kernel: Kernel, given: PlanArgs) -> Result:
    """`plan` for one input.

    An object hypothesis goes to `plan` whole (its text may hold ' :: '), its supports as the
    shorthand for its position.
    """
    hypotheses: list[str | tuple[str, str]] = []
    supports = list(given.supports)
    for index, item in enumerate(given.hypotheses, 1):
        if isinstance(item, HypothesisArg):
            hypotheses.append((item.statement, item.disproof))
            if item.supports:
                supports.append(f"{index}=" + ",".join(item.supports))
        else:
            hypotheses.append(item)
    return plan(
        kernel,
        given.task_id,
        hypotheses=hypotheses,
        supports=supports,
        files=given.files,
        symbols=given.symbols,
        boundary_reason=given.boundary_reason,
        verify=given.verify,
        uncertainty=given.uncertainty,
        reason=given.reason,
        actor=given.actor,
        expected_revision=given.expect_revision,
        lease_token=given.lease_token,
    )
