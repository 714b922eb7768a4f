"""What a configured command verifier is: the `[verifiers.NAME]` table, once validated.

The kernel reads configuration files and builds these; verifiers only read them. The type lives
here, beside the protocol, so a verifier (built in or a plugin) never imports the kernel.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from cortex.cases.bounds import VERIFIER_TIMEOUT_DEFAULT

VerifierKind = Literal["unit_test", "build", "lint", "terminal_run"]
VERIFIER_KINDS: tuple[VerifierKind, ...] = ("unit_test", "build", "lint", "terminal_run")
VERIFIER_KEYS = ("argv", "timeout", "kind")
"""The keys a `[verifiers.NAME]` table may hold."""


class VerifierConfig(msgspec.Struct, kw_only=True, frozen=True):
    """One `[verifiers.NAME]` table: the command a `command:NAME` (or pytest) verifier runs."""

    argv: tuple[str, ...]
    timeout: float = VERIFIER_TIMEOUT_DEFAULT
    kind: VerifierKind = "unit_test"
    """The evidence kind its runs are recorded as."""
    source: str = ""
