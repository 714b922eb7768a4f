"""`cortex case metrics`: how a case went, in numbers; or the same, summed over this store.

A reader: it takes no lock and writes nothing. For one case it reads case.json and its snapshots
as one revision (`read_view`), then streams each ledger up to the length that revision
committed, keeping only counters, so memory does not grow with the ledgers.

Time in a phase runs from the phase line that entered it to the next phase line; the current
phase's time runs to now (the kernel's clock). Terminal phases accrue no time: the case is over.

Commands are counted twice over: committed ones from commands.jsonl (`calls`, with their
durations; a verify's covers its verifiers' run), and those the case's rules refused from the
case's refusal log (`errors`: a refusal commits nothing, so no ledger can count it; see
cortex/cases/refusals.py). Bad input refused before the case was read is in neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from cortex.cases import refusals
from cortex.cases.bounds import DAMAGED_SHOWN_MAX
from cortex.cases.documents import Decisions, Hypotheses, Verification
from cortex.cases.errors import CortexError, IntegrityError
from cortex.cases.records import CaseFile, Command, Evidence, Phase, PhaseChange
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel, format_time, parse_time
from cortex.kernel.lifecycle import TERMINAL
from cortex.kernel.views.status import store_info_of

if TYPE_CHECKING:
    from cortex.cases.store import CaseStore
    from cortex.kernel.proof.assessment import Assessment
    from cortex.workspace.capture import Capture

PHASES: tuple[str, ...] = get_args(Phase)
COMPLETION_KINDS = {
    # complete.py's gate: only `verified` completes unacknowledged; `failed` needs
    # --accept-failed; `partial` and `unverified` need --verification-not-possible. So the
    # verdict recorded at completion says which acknowledgement, if any, was given.
    "verified": "verified",
    "failed": "accepted_failed",
    "partial": "verification_not_possible",
    "unverified": "verification_not_possible",
}


def completion_kind(verdict: str | None) -> str | None:
    """How a case was completed, from the verdict recorded at completion (None: unknown)."""
    return COMPLETION_KINDS.get(verdict or "")


def error_entry(task_id: str, exc: Exception) -> dict[str, object]:
    """A case that could not be read, as an entry: listed, never hidden, never a traceback."""
    if isinstance(exc, CortexError):
        return {"taskId": task_id, "error": {"code": exc.code, "message": exc.message}}
    return {"taskId": task_id, "error": {"code": "io_error", "message": str(exc)}}


def rate(part: int, whole: int) -> float | None:
    """`part / whole` to four places, or None when there is nothing to divide by."""
    return None if whole == 0 else round(part / whole, 4)


class Captures:
    """Live captures of workspaces, one per workspace root per call, for `assess`.

    Cases of one store usually share a workspace, so a report captures each workspace once. A
    `limit` caps how many git workspaces one call captures (each capture runs git).
    """

    def __init__(self, kernel: Kernel, limit: int | None = None) -> None:
        self.kernel = kernel
        self.limit = limit
        self.skipped = 0
        self._seen: dict[str, Capture] = {}

    def judge(self, case: CaseFile, doc: Verification | None) -> Assessment | None:
        """`assess` of the case's latest batch against its workspace now; None if over budget."""
        from cortex.kernel.proof.assessment import assess
        from cortex.workspace.capture import Capture

        if doc is None or not doc.batches:
            # Nothing verified: the verdict does not depend on the code, so capture nothing.
            return assess(case, doc, Capture(reason="nothing has been verified"))
        live = self._seen.get(case.workspace.root)
        if live is None:
            git = case.workspace.kind == "git"
            if git and self.limit is not None and len(self._seen) >= self.limit:
                self.skipped += 1
                return None
            from cortex.kernel.proof.live import live_capture

            live = live_capture(self.kernel, case, writer=False)
            self._seen[case.workspace.root] = live
        return assess(case, doc, live)


def _time(text: str, where: str) -> float:
    try:
        return parse_time(text)
    except ValueError:
        raise IntegrityError(f"{where}: {text!r} is not a time") from None


def _count(counter: dict[str, int], key: str, n: int = 1) -> None:
    counter[key] = counter.get(key, 0) + n


class Tally:
    """The numbers of one case, or of a store once cases are merged into it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.visits: dict[str, int] = {}
        self.calls = 0
        self.by_operation: dict[str, int] = {}
        self.duration_ms = 0
        self.max_duration_ms = 0
        self.evidence = 0
        self.by_kind: dict[str, int] = {}
        self.sensitive = 0
        self.hypotheses = 0
        self.retired = 0
        self.by_hypothesis_status: dict[str, int] = {}
        self.by_decision_status: dict[str, int] = {}
        self.operation_ms: dict[str, tuple[int, int]] = {}
        """Operation -> (total, longest) duration of its committed calls, in milliseconds."""
        self.refused = refusals.Tally()

    def merge(self, other: Tally) -> None:
        """Add another tally's numbers to this one."""
        for phase, seconds in other.seconds.items():
            self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds
        for mine, theirs in (
            (self.visits, other.visits),
            (self.by_operation, other.by_operation),
            (self.by_kind, other.by_kind),
            (self.by_hypothesis_status, other.by_hypothesis_status),
            (self.by_decision_status, other.by_decision_status),
        ):
            for key, n in theirs.items():
                _count(mine, key, n)
        for operation, (total, longest) in other.operation_ms.items():
            before = self.operation_ms.get(operation, (0, 0))
            self.operation_ms[operation] = (before[0] + total, max(before[1], longest))
        refused = self.refused
        refused.total += other.refused.total
        refused.capped = refused.capped or other.refused.capped
        refused.unreadable += other.refused.unreadable
        for key, n in other.refused.by_code.items():
            _count(refused.by_code, key, n)
        for key, n in other.refused.by_operation.items():
            _count(refused.by_operation, key, n)
        self.calls += other.calls
        self.duration_ms += other.duration_ms
        self.max_duration_ms = max(self.max_duration_ms, other.max_duration_ms)
        self.evidence += other.evidence
        self.sensitive += other.sensitive
        self.hypotheses += other.hypotheses
        self.retired += other.retired

    def sections(self) -> dict[str, object]:
        """The commands, evidence, hypotheses and decisions sections of the answer."""
        statuses = self.by_hypothesis_status
        return {
            "commands": {
                "calls": self.calls,
                "errors": {
                    "refused": self.refused.total,
                    "byCode": dict(sorted(self.refused.by_code.items())),
                    "byOperation": dict(sorted(self.refused.by_operation.items())),
                    "capped": self.refused.capped,
                    "unreadable": self.refused.unreadable,
                },
                "byOperation": dict(sorted(self.by_operation.items())),
                "durationMs": {
                    "total": self.duration_ms,
                    "max": self.max_duration_ms,
                    "byOperation": {
                        operation: {"total": total, "max": longest}
                        for operation, (total, longest) in sorted(self.operation_ms.items())
                    },
                },
            },
            "evidence": {
                "total": self.evidence,
                "byKind": dict(sorted(self.by_kind.items())),
                "sensitive": self.sensitive,
            },
            "hypotheses": {
                "total": self.hypotheses,
                "current": self.hypotheses - self.retired,
                "retired": self.retired,
                # As `status` counts them: open and challenged ones are still unresolved.
                "resolved": statuses.get("confirmed", 0) + statuses.get("rejected", 0),
                "byStatus": {s: statuses.get(s, 0) for s in _HYPOTHESIS_STATUSES},
            },
            "decisions": {
                "total": sum(self.by_decision_status.values()),
                **{s: self.by_decision_status.get(s, 0) for s in _DECISION_STATUSES},
            },
        }


_HYPOTHESIS_STATUSES = ("open", "confirmed", "challenged", "rejected")
_DECISION_STATUSES = ("pending", "answered", "withdrawn")


class Measured:
    """One case measured: its tally, its timing and how it ended."""

    def __init__(self, case: CaseFile) -> None:
        self.case = case
        self.tally = Tally()
        self.closed_at: str | None = None
        self.completed_at: float | None = None
        self.completion_verdict: str | None = None
        self.current: dict[str, object] | None = None
        self.last_phase: str | None = None


def measure(store: CaseStore, case: CaseFile, documents: dict[str, Any], now: float) -> Measured:
    """Stream the case's ledgers (committed lengths only) into counters."""
    result = Measured(case)
    _phases(store, result, now)
    tally = result.tally
    for record in store.read_ledger(case, "commands"):
        if isinstance(record, Command):
            tally.calls += 1
            _count(tally.by_operation, record.operation)
            tally.duration_ms += record.duration_ms
            tally.max_duration_ms = max(tally.max_duration_ms, record.duration_ms)
            total, longest = tally.operation_ms.get(record.operation, (0, 0))
            tally.operation_ms[record.operation] = (
                total + record.duration_ms,
                max(longest, record.duration_ms),
            )
    tally.refused = refusals.tally(store.case_path(case.id))
    for record in store.read_ledger(case, "evidence"):
        if isinstance(record, Evidence):
            tally.evidence += 1
            _count(tally.by_kind, record.kind)
            tally.sensitive += record.sensitivity == "sensitive"
    hypotheses: Hypotheses | None = documents.get("hypotheses.json")
    for hypothesis in hypotheses.hypotheses if hypotheses else []:
        tally.hypotheses += 1
        tally.retired += hypothesis.retired
        _count(tally.by_hypothesis_status, hypothesis.status)
    decisions: Decisions | None = documents.get("decisions.json")
    for decision in decisions.decisions if decisions else []:
        _count(tally.by_decision_status, decision.status)
    return result


def _phases(store: CaseStore, result: Measured, now: float) -> None:
    tally = result.tally
    previous: tuple[str, float] | None = None
    for record in store.read_ledger(result.case, "phases"):
        if not isinstance(record, PhaseChange):
            continue
        at = _time(record.timestamp, f"phases.jsonl {record.id}")
        if previous is not None:
            # A wall clock can step back between two commits: never a negative duration.
            _add_time(tally, previous[0], at - previous[1])
        _count(tally.visits, record.to_phase)
        # A blocked case can be unblocked: it is closed only while its last phase says so.
        result.closed_at = record.timestamp if record.to_phase in TERMINAL else None
        if record.to_phase == "complete":
            result.completed_at = at
            result.completion_verdict = record.reason
        previous = (record.to_phase, at)
    if previous is None:
        return
    result.last_phase = previous[0]
    if previous[0] not in TERMINAL:
        seconds = _add_time(tally, previous[0], now - previous[1])
        result.current = {
            "phase": previous[0],
            "since": format_time(previous[1]),
            "seconds": round(seconds, 3),
        }


def phase_times(store: CaseStore, case: CaseFile, now: float) -> dict[str, object]:
    """Seconds and visits per phase, and the current phase's start, from phases.jsonl.

    The current phase counts up to `now`; a closed case stops at its close.
    """
    result = Measured(case)
    _phases(store, result, now)
    visits = result.tally.visits
    return {
        "inPhase": _in_phase(result.tally),
        "visits": {p: visits[p] for p in PHASES if p in visits},
        "current": result.current,
    }


def _add_time(tally: Tally, phase: str, seconds: float) -> float:
    seconds = max(seconds, 0.0)
    tally.seconds[phase] = tally.seconds.get(phase, 0.0) + seconds
    return seconds


def _in_phase(tally: Tally) -> dict[str, float]:
    return {p: round(tally.seconds[p], 3) for p in PHASES if p in tally.seconds}


def _coverage(case: CaseFile, assessment: Assessment | None) -> dict[str, object]:
    """Required verifiers (the plan's) against those with current proof, as `assess` says."""
    required = list(case.verification_required)
    if assessment is None:
        return {"required": required, "covered": None, "missing": None, "coverage": None}
    covered = [r for r in required if r not in assessment.missing_requirements]
    return {
        "required": required,
        "covered": covered,
        "missing": [r for r in required if r not in covered],
        "coverage": rate(len(covered), len(required)),
    }


def metrics(kernel: Kernel, task_id: str | None = None) -> Result:
    """One case's metrics, or (without an id) the current workspace's store summed up."""
    if task_id is None:
        return _store_metrics(kernel)
    task_id, store = kernel.find(task_id)
    now = kernel.clock()
    case, documents = store.read_view(task_id)
    measured = measure(store, case, documents, now)
    doc: Verification | None = documents.get("verification.json")
    assessment = Captures(kernel).judge(case, doc)
    warnings = store.debris(case)
    if measured.last_phase is not None and measured.last_phase != case.status:
        warnings.append(
            f"phases.jsonl ends in {measured.last_phase} but case.json says {case.status}; "
            f"run cortex case audit {case.id}"
        )
    end = _time(measured.closed_at, "phases.jsonl") if measured.closed_at else now
    opened = _time(case.created_at, "case.json createdAt")
    completion = None
    if case.status == "complete":
        completion = {
            "verdict": measured.completion_verdict,
            "kind": completion_kind(measured.completion_verdict),
            "seconds": None
            if measured.completed_at is None
            else round(max(measured.completed_at - opened, 0.0), 3),
        }
    verification = _coverage(case, assessment)
    verification["verdict"] = assessment.status if assessment else None
    verification["batchId"] = assessment.batch_id if assessment else None
    verification["batches"] = len(doc.batches) if doc else 0
    return Result(
        data={
            "taskId": case.id,
            "status": case.status,
            "mode": case.mode,
            "revision": case.revision,
            "store": store_info_of(kernel, store, case),
            "now": format_time(now),
            "time": {
                "openedAt": case.created_at,
                "closedAt": measured.closed_at,
                "elapsedSeconds": round(max(end - opened, 0.0), 3),
                "inPhase": _in_phase(measured.tally),
                "visits": {
                    p: measured.tally.visits[p] for p in PHASES if p in measured.tally.visits
                },
                "current": measured.current,
            },
            **measured.tally.sections(),
            "verification": verification,
            "completion": completion,
            "warnings": warnings,
        }
    )


def _spread(values: list[float]) -> dict[str, object]:
    """Count, mean and median of durations in seconds (None when there are none)."""
    if not values:
        return {"count": 0, "meanSeconds": None, "medianSeconds": None}
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {
        "count": len(ordered),
        "meanSeconds": round(sum(ordered) / len(ordered), 3),
        "medianSeconds": round(median, 3),
    }


def _store_metrics(kernel: Kernel) -> Result:
    """Every case of this workspace's store, measured and summed; unreadable ones named."""
    store = kernel.store
    now = kernel.clock()
    captures = Captures(kernel)
    total = Tally()
    by_phase = dict.fromkeys(PHASES, 0)
    unreadable: list[dict[str, object]] = []
    unreadable_count = cases = 0
    completions = dict.fromkeys(("verified", "accepted_failed", "verification_not_possible"), 0)
    unknown_completions = 0
    to_complete: list[float] = []  # one float per completed case, for the median
    active = required = covered = 0
    verdicts: dict[str, int] = {}
    for task_id in store.list_ids():
        cases += 1
        try:
            case, documents = store.read_view(task_id)
            measured = measure(store, case, documents, now)
            assessment = None
            if case.status not in TERMINAL:
                # Closed cases are not judged against today's code: it has moved on since.
                assessment = captures.judge(case, documents.get("verification.json"))
            opened = _time(case.created_at, "case.json createdAt")
        except (CortexError, OSError) as exc:
            unreadable_count += 1
            if len(unreadable) < DAMAGED_SHOWN_MAX:
                unreadable.append(error_entry(task_id, exc))
            continue
        total.merge(measured.tally)
        by_phase[case.status] += 1
        if assessment is not None:
            active += 1
            _count(verdicts, assessment.status)
            required += len(case.verification_required)
            missing = assessment.missing_requirements
            covered += sum(r not in missing for r in case.verification_required)
        if case.status == "complete":
            kind = completion_kind(measured.completion_verdict)
            if kind is None:
                unknown_completions += 1
            else:
                completions[kind] += 1
            if measured.completed_at is not None:
                to_complete.append(max(measured.completed_at - opened, 0.0))
    complete = by_phase["complete"]
    return Result(
        data={
            "store": kernel.store_info,
            "now": format_time(now),
            "cases": cases,
            "measured": cases - unreadable_count,
            "unreadable": unreadable_count,
            "unreadableCases": unreadable,
            "byPhase": by_phase,
            "time": {"inPhase": _in_phase(total)},
            **total.sections(),
            "verification": {
                "activeCases": active,
                "required": required,
                "covered": covered,
                "coverage": rate(covered, required),
                "byVerdict": dict(sorted(verdicts.items())),
            },
            "completion": {
                "complete": complete,
                "verified": completions["verified"],
                "acceptedFailed": completions["accepted_failed"],
                "verificationNotPossible": completions["verification_not_possible"],
                "unknown": unknown_completions,
                "verifiedRate": rate(completions["verified"], complete),
                "timeToComplete": _spread(to_complete),
            },
        }
    )


class Metrics(Input):
    """The input of `case metrics`: a case, or none for the store summed."""

    task_id: str | None = None


def metrics_of(kernel: Kernel, given: Metrics) -> Result:
    """`metrics` for one input."""
    return metrics(kernel, given.task_id)
