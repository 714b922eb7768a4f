"""Which repository this is, and the exact state of its code.

- `identity`: the workspace root, its kind (git or plain directory) and the store id that every
  worktree of one clone shares;
- `capture`: the state of the code as a digest of HEAD plus every change git would see,
  computed without writing to `.git`; `working_tree`: the git tree id of that working state,
  built beside the digest from what it read; `tree_id`: git trees parsed, hashed and rebuilt;
  `index_mirror`: the private copy of git's index a capture may refresh; `hidden_entries`: the
  index entries git status does not look at; `git_settings`: which files decide how `git add`
  stores bytes, and their state;
- `git`: the one place Cortex runs the `git` program (time bounds, how a git that never ran
  fails);
- `raw_tree`: a bounded, symlink-safe snapshot of a directory of raw tool output;
- `freshness` (whether a file a record names is still what it was), `history` (commits, trees
  and trailers as git names them), `checkout` (a clean checkout for the merge gate) and `dirty`
  (which files are not as HEAD has them).

This package knows git and the file system, not the rules of cases: it imports nothing of
cortex but `cortex.cases`' file helpers, digests and errors.
"""
