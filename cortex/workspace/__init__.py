"""Which repository this is, and the exact state of its code.

- `identity`: the workspace root, its kind (git or plain directory) and the store id that every
  worktree of one clone shares.
- `capture`: the state of the code as a digest of HEAD plus every change git would see,
  computed without writing to `.git`.
- `raw_tree`: a bounded, symlink-safe snapshot of a directory of raw tool output.

This package knows git and the file system, not the rules of cases: it imports nothing of
cortex but `cortex.cases`' file helpers, digests and errors.
"""
