"""Verifiers: the protocol (`base`), the registry, and the built-ins (command, pytest, scope).

Third-party verifiers register through the `cortex.verifiers` entry-point group
(docs/design/verification.md §2).
"""
