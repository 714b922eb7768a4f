"""A case as git objects and refs: export, tree merge, reading what a remote holds, bundles.

docs/design/sharing.md is the contract. This package runs the `git` program (argv lists, no
shell) and imports only `cortex.cases` and `cortex.workspace`; the use cases that decide and
write (`share`, `fetch`, `bundle`) are the kernel's (`cortex.kernel.share`). Import the
submodule you need; the package itself stays empty.
"""
