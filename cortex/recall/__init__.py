"""Recall: the derived, disposable index of what cases learned (docs/design/recall.md).

Cards are made from committed case files (`cards`, `source`), searched with BM25 (`index`, with
`bm25` as the pure-Python engine, `terms` the words of cards and queries alike, `manifest` what
it is behind on) and served within token budgets (`budget`); `advice` is what a case's writer
is told unasked (the brief's order, the plan warning); `notable` decides which records become
cards without loading the index. This layer reads
cases and the workspace and never imports the kernel: the kernel decides when to index.
`cortex.recall.index` is the only module that loads `sqlite3`.
"""
