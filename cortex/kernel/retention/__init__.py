"""Bounding what a store keeps; nothing goes away by itself (docs/design/storage.md).

- `archive`: `case archive`, `unarchive`, `prune` and `rm`, for whole cases;
- `forget`: `case forget`, a person removing one evidence record, or its raw output, for good;
- `recall_rows`: a case's rows dropped from the recall index (and its text purged) on the way.
"""
