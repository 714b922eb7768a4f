"""Which repository this is, and the exact state of its code.

- `identity`: the workspace root, its kind (git or plain directory) and the store id that every
  worktree of one clone shares;
- `capture`: the state of the code as a digest of HEAD plus every change git would see,
  computed without writing to `.git`; `tree_id`: the git tree id of that working state;
- `raw_tree`: a bounded, symlink-safe snapshot of a directory of raw tool output;
- `freshness` (whether a file a record names is still what it was), `history` (commits, trees
  and trailers as git names them), `checkout` (a clean checkout for the merge gate) and `dirty`
  (which files are not as HEAD has them).

This package knows git and the file system, not the rules of cases: it imports nothing of
cortex but `cortex.cases`' file helpers, digests and errors.
"""
