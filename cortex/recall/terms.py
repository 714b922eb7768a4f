"""Search terms: `[a-z0-9]+` after lower-casing, the same for cards and for queries.

The index stores each card's terms already split, and a query is split the same way here, so
no engine tokenizer decides what a word is and no query syntax ever reaches one: every term is
written as a quoted FTS5 string (`fts5_match`).
"""

from __future__ import annotations

import re

_TERM = re.compile(r"[a-z0-9]+")

STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "no",
        "not",
        "of",
        "on",
        "or",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "was",
        "were",
        "will",
        "with",
    }
)
"""Common English words the brief and the plan warning leave out of what they compare.

A query typed by a caller keeps every term: BM25 already gives such words almost no weight.
"""


def terms(text: str) -> list[str]:
    """Every term of `text`, in order, repeats kept (a card's terms)."""
    return _TERM.findall(text.lower())


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(terms(text)))


def content_terms(text: str) -> list[str]:
    """The distinct terms of `text` without common English words (the brief, the plan check)."""
    return [term for term in query_terms(text) if term not in STOP_WORDS]


def joined(words: list[str]) -> str:
    """Terms as stored: each one between spaces, two spaces apart.

    FTS5's ascii tokenizer reads the same words from it, and the Python engine finds a term as
    the substring `" term "` without two occurrences sharing a space, so `count` is its
    frequency.
    """
    if not words:
        return ""
    return " " + "  ".join(words) + " "


def fts5_match(words: list[str]) -> str:
    """An FTS5 query matching any of `words`, each a quoted string (terms need no escaping)."""
    return " OR ".join(f'"{word}"' for word in words)


def overlap(a: list[str], b: list[str]) -> float:
    """Jaccard similarity of two term lists as sets (0.0 when both are empty)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0
