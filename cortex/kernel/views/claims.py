"""The agent's claims set against what its host saw it do (docs/design/activity.md, section 5).

Read-only. From a case's activity ledger: the last observed run of each test runner, and the
flags a reviewer must see: a claim that the tests pass recorded after a failing run with no
passing run since; files edited after the latest verification; files edited outside the plan's
boundary. Each flag names the records it rests on. A case without activity gets None: nothing
was observed, and nothing is claimed about it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from cortex.cases import activity, ledger
from cortex.cases.errors import CortexError
from cortex.cases.layout import ledger_file
from cortex.cases.records import CaseFile, Evidence
from cortex.cases.store import CaseStore
from cortex.kernel.kernel import Kernel

CLAIMS_READ = 200
"""Newest evidence records read for claims of passing tests (a bounded read from the end)."""
FILES_SHOWN = 5
_PASSING = re.compile(
    r"\b(?:all\s+)?(?:the\s+)?(?:unit\s+)?tests?\s+(?:now\s+|all\s+)?(?:pass(?:es|ed)?|are\s+"
    r"passing|(?:are\s+)?green|succeed(?:s|ed)?)\b|\ball\s+green\b|\bsuite\s+(?:is\s+)?"
    r"(?:green|passing)\b|\b\d+\s+passed\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no longer|still fail|fail(?:s|ed|ing)?)\b", re.IGNORECASE
)


def says_passing(text: str) -> bool:
    """Whether a claim or note says the tests pass (and nothing in it says they fail)."""
    return bool(_PASSING.search(text)) and not _NEGATED.search(text)


def _recent_evidence(store: CaseStore, case: CaseFile) -> list[Evidence]:
    state = case.ledgers.get("evidence")
    if state is None or state.bytes == 0:
        return []
    path = os.path.join(store.case_path(case.id), ledger_file("evidence"))
    lines = ledger.tail_lines(path, state.bytes, CLAIMS_READ)
    found: list[Evidence] = []
    for line in lines:
        record = ledger.parse_line(line, Evidence, where=path)
        if record.revision <= case.revision:
            found.append(record)
    return found


def observed(store: CaseStore, case: CaseFile, documents: dict[str, Any]) -> dict[str, Any] | None:
    """The activity summary and flags of one case, or None when nothing was observed."""
    log = activity.read(store.case_path(case.id), case.id)
    if not log.records and not log.problems and not log.dropped:
        return None
    runs: dict[str, activity.Activity] = {}
    for record in log.records:
        if record.runner is not None and record.outcome is not None:
            runs[record.runner] = record
    flags: list[dict[str, Any]] = []
    failing = [r for r in runs.values() if r.outcome == "failed"]
    if failing:
        last_failure = max(failing, key=lambda r: r.timestamp)
        passing_since = any(
            r.outcome == "passed" and r.timestamp > last_failure.timestamp for r in runs.values()
        )
        if not passing_since:
            try:
                recent = _recent_evidence(store, case)
            except CortexError:
                recent = []
            flags.extend(
                {
                    "kind": "claim_after_failed_run",
                    "message": (
                        f"{claim.id} says the tests pass, but the last {last_failure.runner} "
                        f"run observed ({last_failure.id}, {last_failure.timestamp}) failed: "
                        f"{last_failure.summary or 'exit status not zero'}"
                    ),
                    "records": [claim.id, last_failure.id],
                }
                for claim in recent
                if claim.timestamp > last_failure.timestamp and says_passing(claim.claim)
            )
    verification = documents.get("verification.json")
    if verification is not None and verification.batches:
        batch = verification.batches[-1]
        later = [r for r in log.records if r.files and r.timestamp > batch.finished_at]
        if later:
            files = sorted({f for r in later for f in r.files})
            flags.append(
                {
                    "kind": "edited_after_verify",
                    "message": (
                        f"{len(files)} file(s) edited after the latest verification "
                        f"({batch.id}): {', '.join(files[:FILES_SHOWN])}"
                    ),
                    "records": [r.id for r in later][-FILES_SHOWN:],
                }
            )
    strays = [r for r in log.records if r.outside]
    if strays:
        files = sorted({f for r in strays for f in r.outside})
        flags.append(
            {
                "kind": "edited_outside_boundary",
                "message": (
                    f"{len(files)} file(s) edited outside the plan's boundary: "
                    f"{', '.join(files[:FILES_SHOWN])}"
                ),
                "records": [r.id for r in strays][-FILES_SHOWN:],
            }
        )
    return {
        "records": len(log.records),
        "dropped": log.dropped,
        "problems": log.problems,
        "lastAt": log.records[-1].timestamp if log.records else None,
        "lastRuns": [
            {
                "runner": r.runner,
                "outcome": r.outcome,
                "summary": r.summary,
                "at": r.timestamp,
                "id": r.id,
                "actor": r.actor,
            }
            for r in sorted(runs.values(), key=lambda r: r.timestamp)
        ],
        "flags": flags,
    }


def summary_lines(seen: dict[str, Any] | None) -> list[str]:
    """A few Markdown lines of what was observed (the handoff's), empty when nothing was."""
    if not seen:
        return []
    lines = ["", f"## Observed by the host ({seen['records']} tool calls)", ""]
    lines += [
        f"- last {run['runner']} run {run['outcome']} at {run['at']}: {run['summary'] or '-'}"
        for run in seen["lastRuns"]
    ]
    lines += [f"- [{flag['kind']}] {flag['message']}" for flag in seen["flags"]]
    return lines


def edited_by(kernel: Kernel, label: str) -> set[str]:
    """The gated cases of this workspace a subagent (`Explore@a430`) edited since their proof.

    Only those hold up the subagent's stop (docs/design/hosts.md, section 4).
    """
    from cortex.kernel.activity.workspace_cases import GATED, open_cases

    found: set[str] = set()
    for case, documents in open_cases(kernel):
        if case.status not in GATED:
            continue
        verification = documents.get("verification.json")
        since = (
            verification.batches[-1].finished_at if verification and verification.batches else ""
        )
        log = activity.read(kernel.store.case_path(case.id), case.id)
        if any(
            r.files and r.timestamp > since and r.actor.endswith("/" + label) for r in log.records
        ):
            found.add(case.id)
    return found
