"""The recall index on its own: two engines with one answer, and an order that never wavers.

Parity: SQLite FTS5's `bm25()` and the pure-Python engine (`cortex.recall.bm25`, FTS5's formula)
give identical top-10 lists, scores and totals on a seeded 10,000-card corpus, with and without
filters. Determinism: cards inserted in another order give byte-identical pages, and the pages
of a query, concatenated, are its full ordering with no gap and no repeat.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from recall_corpus import cards as corpus_cards
from recall_corpus import queries as corpus_queries

from cortex.cases.records import encode
from cortex.recall import bm25
from cortex.recall import index as recall_index
from cortex.recall.cards import Card
from cortex.recall.index import Filters, Index


@pytest.fixture(scope="session")
def corpus() -> list[Card]:
    """The seeded 10,000-card corpus, built once when a test first needs it."""
    return corpus_cards(10_000)


@pytest.fixture(scope="session")
def queries() -> list[list[str]]:
    """The corpus's 60 queries, broad and selective."""
    return corpus_queries(60)


def build(path: Path, cards: list[Card]) -> Index:
    """An index at `path` holding `cards`, each store under /stores/<id>."""
    index = Index.write(str(path))
    with index.transaction():
        by_store: dict[str, list[Card]] = {}
        for card in cards:
            by_store.setdefault(card.store, []).append(card)
        for store, group in by_store.items():
            index.insert_cards(f"/stores/{store}", group, fresh=True)
        index.set_meta("built", "now")
    return index


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory, corpus: list[Card]) -> dict[str, Index]:
    if not recall_index.fts5_available():
        pytest.skip("this SQLite has no FTS5: only the Python engine can run")
    base = tmp_path_factory.mktemp("engines")
    return {name: build(base / f"x-{name}.sqlite", corpus) for name in ("fts5", "bm25py")}


def answer(index: Index, words: list[str], filters: Filters, limit: int = 10) -> object:
    total, hits = index.search(words, filters, limit=limit)
    return total, [(hit.card.id, hit.store, hit.card.score) for hit in hits]


def test_both_engines_give_the_same_top_ten_and_totals(
    engines: dict[str, Index], queries: list[list[str]]
) -> None:
    assert engines["fts5"].count_cards() == engines["bm25py"].count_cards() == 10_000
    differ = [
        words
        for words in queries
        if answer(engines["fts5"], words, Filters()) != answer(engines["bm25py"], words, Filters())
    ]
    assert differ == []
    # The corpus has both kinds of query: ones matching most cards, and selective ones.
    totals = [answer(engines["fts5"], words, Filters())[0] for words in queries]  # type: ignore[index]
    assert max(totals) > 5_000
    assert min(totals) < 100


@pytest.mark.parametrize(
    "filters",
    [
        Filters(kinds=("hypothesis",), statuses=("rejected",)),
        Filters(repo="repo1"),
        Filters(lower="2026-03-01T00:00:00.000Z", upper="2026-07-01T00:00:00.000Z"),
        Filters(store="/stores/repo2-000000000002", exclude_task="task_0000000000000000000000Y8"),
    ],
    ids=["kind-status", "repo", "dates", "store"],
)
def test_filters_change_which_cards_not_their_scores(
    engines: dict[str, Index], filters: Filters, queries: list[list[str]]
) -> None:
    for words in queries[:6]:
        fts, python = (
            answer(engines["fts5"], words, filters),
            answer(engines["bm25py"], words, filters),
        )
        assert fts == python, words
        # The brief's path (rank in FTS5 alone, filter the best rows) gives the same page.
        _, first = engines["fts5"].best(words, filters, limit=10)
        assert [(h.card.id, h.store, h.card.score) for h in first] == fts[1], words  # type: ignore[index]
    # A filtered card scores what it scores unfiltered: the corpus statistics are the index's.
    words = queries[0]
    everything = {i: s for i, _, s in answer(engines["fts5"], words, Filters(), 10_000)[1]}  # type: ignore[index]
    for card_id, _, score in answer(engines["fts5"], words, filters, 100)[1]:  # type: ignore[index]
        assert everything[card_id] == score


def test_the_python_engine_alone_answers_as_fts5_did(
    engines: dict[str, Index], monkeypatch: pytest.MonkeyPatch, queries: list[list[str]]
) -> None:
    """With the probe saying no FTS5, the engine named in the file name is the Python one."""
    monkeypatch.setattr(recall_index, "_probed", False)
    assert recall_index.engine_name() == "bm25py"
    assert recall_index.index_path("/c", "/s").endswith("-bm25py.sqlite")
    words = queries[1]
    assert answer(engines["bm25py"], words, Filters()) == answer(engines["fts5"], words, Filters())


def test_scores_follow_fts5s_formula_by_hand() -> None:
    """Two cards, two terms: the score written out from the formula in bm25.py's docstring."""
    import math

    rows = [
        bm25.Row("a", "s", " x  y  x ", 3, eligible=True),
        bm25.Row("b", "s", " y  z ", 2, eligible=True),
    ]
    avgdl = 5 / 2
    idf_x = max(math.log((2 - 1 + 0.5) / (1 + 0.5)), 0.0) or 1e-6
    idf_y = 1e-6  # in both cards: ln(0.5 / 2.5) < 0, floored
    score_a = idf_x * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 3 / avgdl))
    score_a += idf_y * (1 * 2.2) / (1 + 1.2 * (0.25 + 0.75 * 3 / avgdl))
    assert bm25.rank(rows, ["x", "y"])[0] == (round(score_a, 9), "a", "s")


def test_a_shuffled_rebuild_gives_byte_identical_pages(
    tmp_path: Path, corpus: list[Card], queries: list[list[str]]
) -> None:
    cards = corpus[:3000]
    shuffled = list(cards)
    random.Random(5).shuffle(shuffled)
    engine = recall_index.engine_name()
    first = build(tmp_path / f"a-{engine}.sqlite", cards)
    second = build(tmp_path / f"b-{engine}.sqlite", shuffled)
    for words in queries[:15]:
        for offset in (0, 10, 40):
            pages = [
                encode(index.search(words, Filters(), limit=10, offset=offset))
                for index in (first, second)
            ]
            assert pages[0] == pages[1], (words, offset)


def test_pages_concatenate_to_the_full_order_without_gap_or_repeat(
    tmp_path: Path, corpus: list[Card], queries: list[list[str]]
) -> None:
    engine = recall_index.engine_name()
    index = build(tmp_path / f"p-{engine}.sqlite", corpus[:2000])
    pages = 0
    for words in queries[:30]:
        total, everything = index.search(words, Filters(), limit=10_000)
        walked: list[str] = []
        offset, sizes = 0, []
        while offset < total:
            page_total, page = index.search(words, Filters(), limit=97, offset=offset)
            assert page_total == total
            sizes.append(len(page))
            walked.extend(hit.card.id for hit in page)
            offset += len(page)
        pages += len(sizes)
        assert walked == [hit.card.id for hit in everything]
        assert len(set(walked)) == len(walked) == sum(sizes) == total
        ranks = [(-(hit.card.score or 0.0), hit.card.id) for hit in everything]
        assert ranks == sorted(ranks), "ties are broken by id"
    assert pages > 60, "most walks span several pages"


def test_query_syntax_is_never_handed_to_the_engine(engines: dict[str, Index]) -> None:
    """Terms are [a-z0-9]+ and each is quoted: FTS5 operators are only words here."""
    from cortex.recall.terms import fts5_match, query_terms

    for text in ("NEAR(t1 t2)", '"t1', "t1*", "terms:t1", "t1 AND t2 NOT t3", "^t1", "{t1}"):
        words = query_terms(text)
        assert all(word.isascii() and word.isalnum() and word == word.lower() for word in words)
        assert fts5_match(words).count('"') == 2 * len(words)
        assert answer(engines["fts5"], words, Filters()) == answer(
            engines["bm25py"], words, Filters()
        )
