"""Verifiers: the protocol (`base`), the `registry`, and the built-ins.

- `command` (a configured command, with `config` its validated table, `runner` running it and
  `programs` finding its program), `pytest_junit` (pytest's summary and JUnit report), `scope`
  (changed files against the plan's boundary);
- `testing`: helpers for a plugin author, without a store, a repository or a kernel.

Third-party verifiers register through the `cortex.verifiers` entry-point group
(docs/design/verification.md §2).
"""
