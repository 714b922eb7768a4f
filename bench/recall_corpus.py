"""A seeded synthetic corpus of recall cards, and queries over it (parity tests and benchmarks).

The vocabulary is Zipf-distributed, like words in real notes: a few terms are in most cards,
most terms in a few. "Raw" queries mix in common words (they match most of the corpus, the
worst case for scoring); "selective" ones use terms with low document frequency.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cortex.recall.cards import Card, PathRef  # noqa: E402 - the checkout, not an install

KINDS = (("hypothesis", "rejected"), ("hypothesis", "confirmed"), ("decision", "active"),
         ("outcome", "verified"), ("evidence", "notable"))  # fmt: skip
COMMON = ("the", "fix", "login", "redirect", "cache", "error", "test", "session")
VOCABULARY = [f"t{i}" for i in range(4000)]
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]


def ulid(number: int) -> str:
    """A fixed, valid, sortable ULID body for card `number`."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    digits = []
    for _ in range(26):
        digits.append(alphabet[number % 32])
        number //= 32
    return "0" + "".join(reversed(digits))[1:]


def cards(count: int = 10_000, seed: int = 16, stores: int = 4) -> list[Card]:
    """`count` cards over `stores` stores, 20 cards to a case, texts of 20 to 80 terms."""
    rng = random.Random(seed)
    made: list[Card] = []
    for number in range(count):
        kind, status = KINDS[number % len(KINDS)]
        words = rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(20, 80))
        words += rng.sample(COMMON, rng.randint(0, 3))
        rng.shuffle(words)
        prefix = {"hypothesis": "hyp", "decision": "dec", "outcome": "task", "evidence": "ev"}
        card_id = f"{prefix[kind]}_{ulid(number + 1)}"
        store = f"repo{number % stores}-{number % stores:012x}"
        made.append(
            Card(
                id=card_id,
                task_id=f"task_{ulid(1_000_000 + number // 20)}",
                store=store,
                repository=f"repo{number % stores}",
                kind=kind,
                status=status,
                title=" ".join(words[:12]),
                text=f"{status} {kind}: " + " ".join(words),
                created=f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}T00:00:00.000Z",
                paths=[PathRef(path=f"src/{words[0]}.py")] if number % 3 == 0 else [],
            )
        )
    return made


def queries(count: int = 100, seed: int = 61) -> list[list[str]]:
    """Half raw (with common words), half selective (rarer terms only), 1 to 5 terms each."""
    rng = random.Random(seed)
    found: list[list[str]] = []
    for number in range(count):
        if number % 2 == 0:
            words = rng.sample(COMMON, rng.randint(1, 2))
            words += rng.choices(VOCABULARY[:300], k=rng.randint(1, 3))
        else:
            words = rng.choices(VOCABULARY[800:3000], k=rng.randint(1, 3))
        found.append(list(dict.fromkeys(words)))
    return found
