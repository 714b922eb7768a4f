"""BM25 in Python with FTS5's exact formula: the engine where SQLite was built without FTS5.

FTS5 (ext/fts5/fts5_aux.c) scores a row against phrases p_1..p_n as

    sum_i idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2, b = 0.75, f_i the phrase's frequency in the row, D the row's token count, avgdl
the mean token count over the whole table, and idf_i = ln((N - n_i + 0.5) / (n_i + 0.5)),
replaced by 1e-6 when it is not positive (n_i rows contain the phrase, N rows in all). The
operations below are written in FTS5's order so the two engines compute the same doubles;
tests/test_recall_parity.py keeps them to the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
DIGITS = 9
"""Scores are compared rounded to this many decimals, then by id: a total, stable order."""


class Row(NamedTuple):
    """One card as the Python engine sees it."""

    id: str
    store: str
    terms: str
    """The card's terms as stored (`cortex.recall.terms.joined`)."""
    length: int
    """How many terms: FTS5's row size."""
    eligible: bool
    """Whether the row passes the query's filters (it counts in the corpus either way)."""


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency, floored at 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def rank(rows: Sequence[Row], words: Sequence[str]) -> list[tuple[float, str, str]]:
    """(rounded score, id, store) of every eligible matching row, best first, ties by id.

    Only rows holding a word are scored. A phrase a row lacks adds exactly 0.0 to FTS5's sum,
    so leaving it out keeps the same double.
    """
    count = len(rows)
    if count == 0 or not words:
        return []
    avgdl = sum(row.length for row in rows) / count
    texts = [row.terms for row in rows]
    weights: list[float] = []
    found: dict[int, list[tuple[int, float]]] = {}
    for phrase, word in enumerate(words):
        needle = f" {word} "
        hits = [i for i, text in enumerate(texts) if needle in text]
        weights.append(idf(count, len(hits)))
        for i in hits:
            found.setdefault(i, []).append((phrase, float(texts[i].count(needle))))
    scored: list[tuple[float, str, str]] = []
    for i, frequencies in found.items():
        row = rows[i]
        if not row.eligible:
            continue
        norm = K1 * (1 - B + B * float(row.length) / avgdl)
        score = 0.0
        for phrase, freq in frequencies:  # in phrase order, as FTS5 sums
            score += weights[phrase] * ((freq * (K1 + 1.0)) / (freq + norm))
        scored.append((round(score, DIGITS), row.id, row.store))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return scored
