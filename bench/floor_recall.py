"""The floor for `cortex recall QUERY --json`: the same SQLite file and query, stdlib only.

It opens the index read-only with `sqlite3`, counts the matches, reads the first page ordered
by bm25() then id (`cortex recall` reads a few rows more, to break ties of the rounded score
by id) and prints the rows as JSON. No configuration, workspace, manifest check, labels or envelope.

Usage: python floor_recall.py INDEX_FILE TERM...
"""

from __future__ import annotations

import json
import sqlite3
import sys


def main() -> None:
    path, words = sys.argv[1], sys.argv[2:]
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    match = " OR ".join(f'"{word}"' for word in words)
    total = db.execute(
        "SELECT count(*) FROM cards_fts WHERE cards_fts MATCH ?", (match,)
    ).fetchone()[0]
    rows = db.execute(
        "SELECT b.card, bm25(cards_fts) AS r FROM cards_fts JOIN bodies b "
        "ON b.rowid = cards_fts.rowid WHERE cards_fts MATCH ? ORDER BY r LIMIT 10",
        (match,),
    ).fetchall()
    print(json.dumps({"total": total, "cards": [[bytes(c).decode(), r] for c, r in rows]}))


if __name__ == "__main__":
    main()
