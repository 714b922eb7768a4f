"""The case directory as data: records, snapshots, ledgers, blobs, locks, commits, recovery.

This package imports nothing else of cortex, reads no environment and prints nothing. Import the
submodule you need (`cortex.cases.store`, `cortex.cases.records`, ...): the package itself stays
empty so that importing one piece never pays for the others.
"""
