"""The brief and the stop reason as the model reads them: plain lines, within a budget.

Every character here lands in the agent's context at each session start, so the case the
session is on is shown whole and the rest shrink to a line each (docs/design/hosts.md §3).
"""

from __future__ import annotations

from typing import Any

from cortex.kernel.views.brief import CaseBrief, Gate, Proof

BRIEF_BUDGET = 6000
"""Characters in a brief, about 1,500 tokens, however many cases are open."""
GOAL_SHOWN = 120
LINE_SHOWN = 240


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def proof_line(proof: Proof) -> str:
    """Where the proof stands, in one line."""
    verdict = f", {proof.verdict}" if proof.verdict else ""
    if proof.state == "current":
        return f"current ({proof.batch}{verdict}): the working tree is the one verified"
    if proof.state == "stale":
        line = f"stale: the code changed since {proof.batch}{verdict}"
        if proof.changed:
            more = proof.changed_total - len(proof.changed)
            line += "; changed: " + ", ".join(proof.changed) + (f" (+{more} more)" if more else "")
        return line
    if proof.state == "unbound":
        return f"none: the latest batch {proof.batch} is not bound to the code"
    if proof.state == "unbindable":
        return "cannot be bound here: " + _clip(proof.reason or "no git state", LINE_SHOWN)
    return "none yet"


def _lease_line(case: CaseBrief) -> str:
    if case.lease is None:
        return "free"
    whose = " (this session)" if case.lease.ours else ""
    return f"{case.lease.actor}{whose} until {case.lease.expires_at}"


def _phase(case: CaseBrief) -> str:
    if case.paused_from:
        return f"{case.status} (from {case.paused_from})"
    return case.status


def full(case: CaseBrief) -> list[str]:
    """The case the session is on, with everything it needs to go on."""
    lines = [
        f'{case.task_id} "{_clip(case.goal, GOAL_SHOWN)}"',
        f"  phase: {_phase(case)} · mode: {case.mode} · lease: {_lease_line(case)}",
        f"  proof: {proof_line(case.proof)}",
    ]
    if case.decision is not None:
        question = _clip(case.decision["question"], LINE_SHOWN)
        lines.append(
            f"  waiting for a person: {case.decision['id']} {question!r} (a person answers it "
            "in `cortex studio` or at a terminal; do not answer it yourself)"
        )
    lines.extend(f"  open hypothesis {_clip(h, LINE_SHOWN)}" for h in case.hypotheses[:5])
    if case.next:
        lines.append("  next: " + case.next[0])
        lines.extend("        " + command for command in case.next[1:])
    return lines


def short(case: CaseBrief) -> str:
    """Any other open case, in one line."""
    state = case.proof.state if case.proof.state != "unbindable" else "unbindable"
    return f'  {case.task_id} "{_clip(case.goal, 60)}": {_phase(case)}, proof {state}'


def _recall(found: list[str] | None) -> list[str]:
    if not found:
        return []
    lines = ["  learned in earlier cases of this repository (cortex recall get ID for more):"]
    lines.extend("    - " + _clip(line, LINE_SHOWN) for line in found)
    return lines


def brief_text(found: dict[str, Any], *, source: str) -> str:
    """The brief: the session's case whole, then one line per other case, within the budget."""
    cases: list[CaseBrief] = found["cases"]
    count = len(cases)
    opening = {
        "compact": "The conversation was compacted; this is where your Cortex case stands.",
        "resume": "Resumed; this is where your Cortex case stands.",
        "clear": "The conversation was cleared; this is where your Cortex case stands.",
    }.get(source, "Cortex keeps this task's case: its record is your working memory.")
    noun = "case is" if count == 1 else "cases are"
    lines = [
        f"{opening} {count} open {noun} in this workspace; the first is the one you are on.",
        "Record evidence and verify through `cortex case ...` (or the cortex MCP tools).",
        "",
        *full(cases[0]),
        *_recall(found.get("recall")),
    ]
    text = "\n".join(lines)
    if len(text) > BRIEF_BUDGET:
        text = text[: BRIEF_BUDGET - 1] + "…"
    rest = cases[1:]
    if not rest:
        return text
    shown: list[str] = []
    used = len(text) + len("\nOther open cases:")
    for index, case in enumerate(rest):
        line = short(case)
        tail = f"\n  and {len(rest) - index} more: cortex case list"
        if used + len(line) + 1 + len(tail) > BRIEF_BUDGET:
            shown.append(tail.lstrip("\n"))
            break
        shown.append(line)
        used += len(line) + 1
    return text + "\nOther open cases:\n" + "\n".join(shown)


def stop_reason(gate: Gate) -> str:
    """Why the stop waits, and the exact command that gives it proof."""
    case = gate.case
    goal = _clip(case.goal, GOAL_SHOWN)
    proof = case.proof
    if proof.state == "stale":
        why = f"its proof is {proof_line(proof)}"
    elif proof.state == "unbound":
        why = f"its latest verification ({proof.batch}) is not bound to the code"
    else:
        why = "it has no verification yet"
    return (
        f'Cortex: case {case.task_id} ("{goal}") is {case.status}, and {why}. Before you say '
        f"the work is done, run:\n  {gate.command}\nIf the change is not finished, say what is "
        "left and stop again; if it cannot be verified, record why in the case."
    )
