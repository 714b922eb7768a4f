"""The timeline's search over time-ordered ledgers gives exactly the streaming answers.

`timeline_fast` answers from binary searches and byte counts; `timeline._page`, `_around` and
`_around_date` answer from streaming every entry. On the same cases and random queries (every
filter, cursors, anchors by entry and by date) the two must agree entry for entry and count
for count. The cases include what the fast path has to get right: many entries in one
millisecond whose ids are not in file order (two processes committing in the same
millisecond), several actors, entries before, inside and after a time window, and snapshot
entries (decisions) among the ledger lines.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conftest import base_env, make_repo
from stand_ins import opt_in

from cortex.cases import ledger
from cortex.cases.ids import encode_ulid
from cortex.cases.records import CaseFile, Evidence, LedgerState, Source, decode, encode_pretty
from cortex.kernel.kernel import Kernel, format_time
from cortex.kernel.views.timeline import fast
from cortex.kernel.views.timeline import page as slow
from cortex.kernel.views.timeline.cards import KINDS, Entry, stream
from cortex.kernel.views.timeline.query import Query

ACTORS = ("agent-1", "agent-2", "reviewer")
START = 1_780_000_000.0


class Clock:
    def __init__(self, rng: random.Random) -> None:
        self.now = START
        self.rng = rng

    def __call__(self) -> float:
        # Often the same millisecond, sometimes a jump: ties and gaps both occur.
        self.now += self.rng.choice((0.0, 0.0, 0.001, 0.002, 3.0))
        return self.now


def build(tmp: Path, seed: int) -> tuple[Kernel, str]:
    """A case written through the kernel, then extra lines in shared milliseconds, out of id
    order, appended the way another process's commits would land."""
    from cortex.kernel.human.decisions import answer, request
    from cortex.kernel.steps.evidence import add_evidence, add_note
    from cortex.kernel.steps.open_case import open_case

    rng = random.Random(seed)
    env = base_env(tmp)
    repo = make_repo(tmp / "repo", env)
    kernel = Kernel(str(repo), env, default_actor="agent-1", clock=Clock(rng))
    opt_in(env)  # its answers stand for a person (tests/stand_ins.py)
    task = open_case(kernel, goal="equivalence").data["taskId"]
    for n in range(60):
        actor = rng.choice(ACTORS)
        if rng.random() < 0.2:
            add_note(kernel, task, text=f"note {n}", actor=actor)
        else:
            add_evidence(kernel, task, claim=f"claim {n}", actor=actor)
        if n in {20, 40}:
            asked = request(kernel, task, question=f"q{n}", options=["a=A", "b=B"]).data
            answer(kernel, task, asked["decision"].id, option="a", responder="alice")
    _append_shuffled_run(kernel, task, rng)
    return kernel, task


def _append_shuffled_run(kernel: Kernel, task: str, rng: random.Random) -> None:
    """Ten evidence lines sharing one millisecond, with ids deliberately not in file order."""
    store = kernel.store
    path = Path(store.case_path(task))
    case = decode((path / "case.json").read_bytes(), CaseFile)
    state = case.ledgers["evidence"]
    at = state.last
    millis = int(kernel.clock() * 1000)
    ids = [f"ev_{encode_ulid((millis << 80) | rng.getrandbits(79))}" for _ in range(10)]
    prev, data = state.tip, b""
    for n, record_id in enumerate(ids):
        record = Evidence(
            id=record_id,
            timestamp=at,
            source=Source(tool="other-process", actor=rng.choice(ACTORS)),
            claim=f"same millisecond {n}",
            revision=case.revision,
            prev=prev,
        )
        line = ledger.format_line(record)
        prev = ledger.line_hash(line[:-1])
        data += line
    with (path / "evidence.jsonl").open("ab") as handle:
        handle.write(data)
    case.ledgers["evidence"] = LedgerState(
        count=state.count + len(ids),
        bytes=state.bytes + len(data),
        tip=prev,
        last=at,
        ordered=True,
    )
    (path / "case.json").write_bytes(encode_pretty(case))


def everything(kernel: Kernel, task: str) -> tuple[fast.View, list[Entry]]:
    store = kernel.locate(task)
    case, documents = store.read_view(task)
    view = fast.View(store, case, documents, Query(kinds=(), actor=None, lower=None, upper=None))
    return view, sorted(stream(store, case, documents, frozenset(KINDS)), key=lambda e: e.key)


def random_query(rng: random.Random, entries: list[Entry]) -> Query:
    times = sorted({e.at for e in entries})
    kinds = tuple(k for k in KINDS if rng.random() < 0.5) if rng.random() < 0.5 else ()
    lower = rng.choice(times) if rng.random() < 0.4 else None
    upper = rng.choice(times) if rng.random() < 0.4 else None
    actor = rng.choice(ACTORS) if rng.random() < 0.4 else None
    return Query(kinds=kinds, actor=actor, lower=lower, upper=upper)


def both(view: fast.View, query: Query) -> tuple[fast.View, Any]:
    store, case, documents, _ = view
    entries = (e for e in stream(store, case, documents, query.effective_kinds) if query.matches(e))
    return fast.View(store, case, documents, query), entries


def ids(entries: list[Entry]) -> list[str]:
    return [e.id for e in entries]


@pytest.mark.parametrize("seed", range(6))
def test_pages_agree(tmp_path: Path, seed: int) -> None:
    kernel, task = build(tmp_path, seed)
    view, entries = everything(kernel, task)
    assert fast.usable(view.case, view.query), "the built case is ordered"
    rng = random.Random(seed)
    for _ in range(60):
        query = random_query(rng, entries)
        start = rng.choice(entries).key if rng.random() < 0.6 else None
        limit = rng.randint(1, 25)
        quick, stream_ = both(view, query)
        total, shown, more = fast.page(quick, start, limit)
        s_total, s_shown, s_more = slow._page(stream_, start, limit)
        assert (total, ids(shown), more) == (s_total, ids(s_shown), s_more), (query, start)


@pytest.mark.parametrize("seed", range(6))
def test_anchors_agree(tmp_path: Path, seed: int) -> None:
    check_anchors(tmp_path, seed)


def test_counts_across_read_chunks_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts read the ledger in chunks; chunks of a few bytes split lines and actor names."""
    from cortex.kernel.views.timeline import index as timeline_index

    monkeypatch.setattr(timeline_index, "_CHUNK", 13)
    check_anchors(tmp_path, 7)


def check_anchors(tmp_path: Path, seed: int) -> None:
    kernel, task = build(tmp_path, seed)
    view, entries = everything(kernel, task)
    rng = random.Random(1000 + seed)
    for _ in range(60):
        query = random_query(rng, entries)
        before, after = rng.randint(0, 12), rng.randint(0, 12)
        quick, stream_ = both(view, query)
        target = rng.choice(entries)
        result = fast.around(quick, target, before, after)
        expected = slow._around(stream_, target, before, after)
        assert (result[0], ids(result[1]), result[2]) == (
            expected[0],
            ids(expected[1]),
            expected[2],
        ), (query, target.id)


@pytest.mark.parametrize("seed", range(6))
def test_date_anchors_agree(tmp_path: Path, seed: int) -> None:
    kernel, task = build(tmp_path, seed)
    view, entries = everything(kernel, task)
    rng = random.Random(2000 + seed)
    for _ in range(60):
        query = random_query(rng, entries)
        moment = rng.choice([e.at for e in entries] + [format_time(START - 1)])
        counts = (rng.randint(0, 12), rng.randint(0, 12))
        quick, stream_ = both(view, query)
        try:
            result = fast.around_date(quick, moment, counts, moment)
        except Exception as exc:
            with pytest.raises(type(exc)):
                slow._around_date(stream_, moment, *counts, moment)
            continue
        expected = slow._around_date(stream_, moment, *counts, moment)
        assert (result[0], ids(result[1]), result[2]) == (
            expected[0],
            ids(expected[1]),
            expected[2],
        ), (query, moment)


def test_an_unordered_ledger_is_streamed(tmp_path: Path) -> None:
    """A ledger not marked ordered (written before the rule) never takes the search path."""
    kernel, task = build(tmp_path, 99)
    view, _ = everything(kernel, task)
    assert fast.usable(view.case, view.query)
    view.case.ledgers["commands"].ordered = False
    assert not fast.usable(view.case, view.query)
    only_evidence = Query(kinds=("evidence",), actor=None, lower=None, upper=None)
    assert fast.usable(view.case, only_evidence), "an unread ledger does not matter"
