"""A case as git objects and refs: export, tree merge, reading what a remote holds, bundles.

docs/design/sharing.md is the contract. This package runs the `git` program (argv lists, no
shell) and imports only `cortex.cases` and `cortex.workspace`; the use cases that decide and
write (`share`, `fetch`, `bundle`) are the kernel's (`cortex.kernel.share`). Import the
submodule you need; the package itself stays empty.

- `format` (the shared tree's paths and `head.json`), `git` (running git), `objects` (git trees
  in memory), `errors`, `replica_id` (this state root's replica id and its key);
- leaving: `leaving` (what an export reads, its detect pass, the snapshots as they leave),
  `export` (what would leave, checked first), `project` (what each record becomes on its way
  out), `publish` (an export to a commit on `refs/cortex/cases/<id>`);
- arriving: `remote` (push, fetch, list, bundles), `fetched` (a fetched tree, checked),
  `history` (replica histories compared), `resolve` (which state is in force), `intake` (where
  a fetch lands, the state it would adopt, checked), `merge` (an import folded into the case: a
  new case built whole, or lines, replicas and an adopted state staged in the kernel's
  transaction).
"""
