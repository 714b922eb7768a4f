"""`cortex case handoff`: a bounded transfer packet for the next agent or a reviewer.

One read of the case (the same consistent view `status` uses, then the evidence ledger up to its
committed length) gathers everything the packet may hold; the packet is then built at the
fullest tier whose Markdown and JSON both fit `HANDOFF_BUDGET`. Each tier leaves more out, and
says so: what a tier dropped is listed with counts in `omitted`, in the packet and in the
Markdown, never cut silently (docs/design/handoff.md).

Read-only: no lock, no write to the store. Sensitive evidence is never included, and every
string is redacted again on the way out, for literals configured since it was stored.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from cortex.cases.bounds import (
    HANDOFF_BUDGET,
    HANDOFF_CLAIM_CUT,
    HANDOFF_EVIDENCE_CUT,
    HANDOFF_EVIDENCE_MAX,
    HANDOFF_LIST_CUT,
    HANDOFF_LIST_MIN,
    HANDOFF_TEXT_CUT,
    HANDOFF_TEXT_MIN,
    HANDOFF_TITLE_MAX,
)
from cortex.cases.errors import InvalidInputError
from cortex.cases.records import encode_pretty
from cortex.cases.redact import Redactor
from cortex.kernel.envelope import Action, Data, Result
from cortex.kernel.inputs import Input, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.views.handoff.markdown import render
from cortex.kernel.views.handoff.read import gather, redact_all

SCHEMA = "cortex/handoff/v1"


class Tier(NamedTuple):
    """What one tier keeps. Each tier keeps less than the one before."""

    name: str
    evidence: int
    """Newest shareable evidence records shown."""
    claim: int | None
    """Bytes kept of each claim (and URI, or title); None keeps them whole."""
    titles: bool
    """Evidence as id, time, kind and a one-line title only."""
    core: bool
    """Only the core: no answered decisions, resolution details or receipt notes."""
    text: int | None
    """Bytes kept of every text; None keeps them whole."""
    items: int | None
    """Items kept of every list; None keeps them all."""


TIERS: tuple[Tier, ...] = (
    Tier("full", HANDOFF_EVIDENCE_MAX, None, titles=False, core=False, text=None, items=None),
    Tier(
        "evidence cut",
        HANDOFF_EVIDENCE_CUT,
        HANDOFF_CLAIM_CUT,
        titles=False,
        core=False,
        text=None,
        items=None,
    ),
    Tier(
        "evidence titles",
        HANDOFF_EVIDENCE_CUT,
        HANDOFF_TITLE_MAX,
        titles=True,
        core=False,
        text=None,
        items=None,
    ),
    Tier("core", 0, None, titles=True, core=True, text=None, items=None),
    Tier(
        "core, texts cut",
        0,
        None,
        titles=True,
        core=True,
        text=HANDOFF_TEXT_CUT,
        items=HANDOFF_LIST_CUT,
    ),
    Tier(
        "core, minimal",
        0,
        None,
        titles=True,
        core=True,
        text=HANDOFF_TEXT_MIN,
        items=HANDOFF_LIST_MIN,
    ),
)
COMPACT_TIER = 2
"""Where `--compact` starts: evidence as titles only."""

_VERBATIM = frozenset({"id", "taskId", "batchId", "evidenceId", "nextActions"})
"""Keys never cut by tiers 4 and 5: ids, and commands that must stay runnable."""


def handoff(kernel: Kernel, task_id: str, *, compact: bool) -> Result:
    """The handoff packet of `task_id` (see the module docstring)."""
    task_id, store = kernel.find(task_id)
    case, documents = store.read_view(task_id)
    full = gather(kernel, store, case, documents)
    budget = HANDOFF_BUDGET
    from cortex.kernel.views.claims import observed, summary_lines

    seen = observed(store, case, documents)
    extra = "".join(line + "\n" for line in summary_lines(seen))
    for index in range(COMPACT_TIER if compact else 0, len(TIERS)):
        packet = _packet(full, index, kernel.redactor, compact=compact, budget=budget)
        # Redacted again as a whole: escaping may have changed how a redacted value reads, and
        # the surfaces redact answers once more; a second pass here makes theirs a no-op.
        markdown = kernel.redactor(render(packet) + extra)
        size = len(markdown.encode("utf-8"))
        json_size = len(encode_pretty(packet))
        if size <= budget and json_size <= budget:
            return Result(
                data={
                    "taskId": case.id,
                    "revision": case.revision,
                    "tier": index,
                    "tierName": TIERS[index].name,
                    "compact": compact,
                    "budget": budget,
                    "bytes": size,
                    "jsonBytes": json_size,
                    "omitted": packet["handoff"]["omitted"],
                    "packet": packet,
                    "markdown": markdown,
                    **({} if seen is None else {"observed": seen}),
                },
                actions=msgspec.convert(full["steps"], list[Action]),
            )
    msg = f"the handoff of {case.id} does not fit {budget} bytes even at its last tier"
    raise InvalidInputError(msg)


# Building one tier ---------------------------------------------------------------------------


class _Omissions:
    """What a tier leaves out, each with the tier whose rule left it out and how to read it."""

    def __init__(self) -> None:
        self.entries: list[Data] = []

    def add(self, tier: int, count: int, what: str, note: str, command: str | None = None) -> None:
        if count > 0:
            self.entries.append(
                {"tier": tier, "what": what, "count": count, "note": note, "command": command}
            )


def _since(index: int, field: str) -> int:
    """The first tier that applies the rule `index` applies for `field` (for `omitted`)."""
    value = getattr(TIERS[index], field)
    return next(i for i in range(index + 1) if getattr(TIERS[i], field) == value)


def cut(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to `limit` UTF-8 bytes on a character boundary and marked; and bytes cut.

    A text the marker would make no shorter is kept whole: cutting it would only lose words.
    """
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, 0
    kept = data[:limit].decode("utf-8", "ignore")
    dropped = len(data) - len(kept.encode("utf-8"))
    shown = f"{kept} [... {dropped} more bytes cut]"
    if len(shown.encode("utf-8")) >= len(data):
        return text, 0
    return shown, dropped


def _packet(full: Data, index: int, redactor: Redactor, *, compact: bool, budget: int) -> Data:
    tier = TIERS[index]
    task = full["identity"]["taskId"]
    left = _Omissions()
    evidence = full["evidence"]
    records: list[Data] = evidence["records"][: tier.evidence]
    left.add(0, evidence["sensitive"], "sensitive evidence records", "never part of a handoff")
    left.add(
        _since(index, "evidence"),
        evidence["shareable"] - len(records),
        "older evidence records",
        "list them with",
        f"cortex case timeline {task} --kind evidence",
    )
    records, cut_count = _evidence_at(records, tier)
    what = "evidence records shown as titles only" if tier.titles else "evidence claims cut"
    left.add(
        _since(index, "claim"),
        len(records) if tier.titles else cut_count,
        what,
        "read one whole with",
        f"cortex case read-evidence {task} <evidence id>",
    )
    decisions: list[Data] = full["decisions"]
    if tier.core:
        shown = [d for d in decisions if d["status"] == "pending"]
        left.add(
            _since(index, "core"),
            len(decisions) - len(shown),
            "answered or withdrawn decisions",
            "list them with",
            f"cortex case decision list {task}",
        )
        decisions = shown
    hypotheses = [_hypothesis_at(h, tier) for h in full["hypotheses"]]
    if tier.core:
        left.add(
            _since(index, "core"),
            sum(1 for h in full["hypotheses"] if h["latest"]),
            "latest hypothesis resolutions",
            "the case's hypotheses.json holds every resolution",
        )
    left.add(
        0,
        full["retiredHypotheses"],
        "hypotheses of earlier plans",
        "each earlier plan is an evidence record of kind plan",
    )
    verification = _verification_at(full["verification"], tier, left, index, task)
    left.add(
        0,
        full["moreChildren"],
        "further child cases",
        "the case's case.json lists every child",
    )
    packet: Data = {
        "schema": SCHEMA,
        "handoff": {},
        **full["identity"],
        "children": full["children"],
        "acceptanceCriteria": full["acceptanceCriteria"],
        "plan": full["plan"],
        "hypotheses": hypotheses,
        "verification": verification,
        "decisions": decisions,
        "lease": full["lease"],
        "evidence": {
            "total": evidence["total"],
            "shareable": evidence["shareable"],
            "sensitiveLeftOut": evidence["sensitive"],
            "shown": len(records),
            "detail": _detail(tier),
            "records": records,
        },
        "nextActions": full["nextActions"],
        "warnings": full["warnings"],
    }
    if tier.text is not None and tier.items is not None:
        packet = _shrink_all(packet, tier, index, left, task)
    packet["handoff"] = {
        "tier": index,
        "tierName": tier.name,
        "tiers": len(TIERS),
        "compact": compact,
        "budget": budget,
        "generatedAt": full["generatedAt"],
        "omitted": left.entries,
    }
    final: Data = redact_all(packet, redactor)
    return final


def _detail(tier: Tier) -> str:
    if tier.evidence == 0:
        return "none"
    if tier.titles:
        return "titles"
    return "full" if tier.claim is None else "cut"


def _evidence_at(records: list[Data], tier: Tier) -> tuple[list[Data], int]:
    if tier.titles:
        limit = tier.claim or HANDOFF_TITLE_MAX
        return [
            {
                "id": r["id"],
                "timestamp": r["timestamp"],
                "kind": r["kind"],
                "title": cut(" ".join(r["claim"].split()), limit)[0],
                # Titles only, but never a report of a person's word passed off as their own.
                **({"origin": r["source"]["shown"]} if "shown" in r["source"] else {}),
                **({"replica": r["source"]["replica"]} if "replica" in r["source"] else {}),
                "labels": r["labels"],
            }
            for r in records
        ], 0
    if tier.claim is None:
        return records, 0
    shown: list[Data] = []
    count = 0
    for record in records:
        claim, dropped = cut(record["claim"], tier.claim)
        source = dict(record["source"])
        if source.get("uri"):
            source["uri"], uri_dropped = cut(source["uri"], tier.claim)
            dropped += uri_dropped
        count += dropped > 0
        shown.append({**record, "claim": claim, "source": source})
    return shown, count


def _hypothesis_at(hypothesis: Data, tier: Tier) -> Data:
    if not tier.core:
        return hypothesis
    return {k: v for k, v in hypothesis.items() if k != "latest"}


def _verification_at(
    verification: Data, tier: Tier, left: _Omissions, index: int, task: str
) -> Data:
    sensitive_notes = sum(r["notesLeftOut"] for r in verification["receipts"])
    left.add(0, sensitive_notes, "notes of sensitive receipts", "never part of a handoff")
    if not tier.core:
        return verification
    notes = sum(len(r["notes"]) for r in verification["receipts"])
    left.add(
        _since(index, "core"),
        notes,
        "verifier notes",
        "preview a run's output with",
        f"cortex case read-artifact {task} <artifact ref>",
    )
    receipts = [{**r, "notes": []} for r in verification["receipts"]]
    return {**verification, "receipts": receipts}


class _Shrink:
    def __init__(self, tier: Tier) -> None:
        assert tier.text is not None  # noqa: S101 - only tiers that cut texts get here
        assert tier.items is not None  # noqa: S101
        self.text = tier.text
        self.items = tier.items
        self.texts = 0
        self.dropped: dict[str, int] = {}

    def walk(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            shown, cut_bytes = cut(value, self.text)
            self.texts += cut_bytes > 0
            return shown
        if isinstance(value, list):
            if len(value) > self.items:
                self.dropped[path] = self.dropped.get(path, 0) + len(value) - self.items
                value = value[: self.items]
            return [self.walk(item, path) for item in value]
        if isinstance(value, dict):
            return {
                key: item if key in _VERBATIM else self.walk(item, f"{path}.{key}".lstrip("."))
                for key, item in value.items()
            }
        return value


def _shrink_all(packet: Data, tier: Tier, index: int, left: _Omissions, task: str) -> Data:
    """Tiers 4 and 5: every text and every list cut, each cut counted by where it was."""
    shrink = _Shrink(tier)
    shrunk: Data = shrink.walk(packet, "")
    left.add(
        index,
        shrink.texts,
        f"texts cut to {tier.text} bytes",
        "read them whole with",
        f"cortex case status {task} --json",
    )
    for path, count in sorted(shrink.dropped.items()):
        command = (
            f"cortex case decision list {task}"
            if path.startswith("decisions")
            else f"cortex case status {task} --json"
        )
        left.add(index, count, f"items of {path} beyond the first {tier.items}", "see", command)
    return shrunk


class Handoff(Input):
    """The input of `case handoff` (the CLI's `-o` and `--format` are its own: a file)."""

    task_id: TaskId
    compact: bool = False


def packet(kernel: Kernel, given: Handoff) -> Result:
    """`handoff` for one input."""
    return handoff(kernel, given.task_id, compact=given.compact)
