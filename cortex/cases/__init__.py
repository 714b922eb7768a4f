"""The case directory as data: records, snapshots, ledgers, blobs, locks, commits, recovery.

This package imports nothing else of cortex, reads no environment and prints nothing. Import the
submodule you need (`cortex.cases.store`, `cortex.cases.records`, ...): the package itself stays
empty so that importing one piece never pays for the others.

The map of this package:

- The format: `records` (every record as a msgspec Struct), `documents` (the auxiliary
  snapshots), `ids`, `layout` (names and paths in a store), `tree` (tree artifacts' manifests),
  `bounds` (every size and count limit), `digest` (sha256 without OpenSSL), `errors`.
- Writing it safely: `fsio` (durable file primitives), `lock`, `ledger` (append-only, hash
  chained), `journal` (what a multi-file commit staged), `txn` (one commit), `recovery` (the
  commit a dead writer left, checked and rolled back or finished), `store` (where cases live
  and how they are read), `creation` (a new case published whole, and idempotency keys),
  `_crash` (named crash points for the crash tests).
- Redaction: `redact` (the pipeline), `scrub` (over every string of a record), `escapes` (the
  way back from a redaction to the text as written).
- Beside the record: `activity` (what the host saw the agent do), `refusals` (commands a case's
  rules refused), `state_dir` (where state lives on this machine).
- Removing: `retention` (moving whole case directories), `tombstone` and `forgetting` (the forget
  commit), `forgotten` (what audit says about forgets).
- Reading it back: `integrity` (the audit of one case), `replica_audit` (of its imported
  replicas), `findings` (what an audit reports, and what its checks share), `replicas` and
  `replica_index` (imported replicas as stored, and the merged view).
"""
