"""What a configured command verifier is: the `[verifiers.NAME]` table, once validated.

The kernel reads configuration files and builds these; verifiers only read them. The type lives
here, beside the protocol, so a verifier (built in or a plugin) never imports the kernel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

import msgspec

from cortex.cases.bounds import VERIFIER_TIMEOUT_DEFAULT

VerifierKind = Literal["unit_test", "build", "lint", "terminal_run"]
VERIFIER_KINDS: tuple[VerifierKind, ...] = ("unit_test", "build", "lint", "terminal_run")
VERIFIER_KEYS = ("argv", "timeout", "kind")
"""The keys a `[verifiers.NAME]` table may hold."""
REQUIREMENT = re.compile(r"[a-z][a-z0-9_-]{0,63}(?::[A-Za-z0-9][A-Za-z0-9._-]{0,127})?")
"""What a plan's `--verify` may name (`pytest`, `scope`, `command:unit`), matched whole."""


class VerifierConfig(msgspec.Struct, kw_only=True, frozen=True):
    """One `[verifiers.NAME]` table: the command a `command:NAME` (or pytest) verifier runs."""

    argv: tuple[str, ...]
    timeout: float = VERIFIER_TIMEOUT_DEFAULT
    kind: VerifierKind = "unit_test"
    """The evidence kind its runs are recorded as."""
    source: str = ""


def config_key(requirement: str) -> str | None:
    """The `[verifiers.NAME]` table a requirement runs (None: its kind reads no table)."""
    kind, sep, name = requirement.partition(":")
    if kind == "command" and sep:
        return name
    if kind == "pytest":
        return name if sep else "pytest"
    return None


def definition_digest(requirement: str, configs: Mapping[str, VerifierConfig]) -> str:
    """The sha256 of what a requirement runs: its table's argv, timeout and kind, or none.

    Receipts record it, and the merge gate compares it with the base branch's definition
    (docs/design/report.md): a branch that redefines `command:unit` as `true` is caught. The
    table's source (which file) is left out: moving a definition changes nothing it runs.
    """
    from cortex.cases.digest import sha256_hex

    key = config_key(requirement)
    config = configs.get(key) if key is not None else None
    body: dict[str, object] = {"requirement": requirement}
    if config is not None:
        body.update(argv=list(config.argv), timeout=config.timeout, kind=config.kind)
    return sha256_hex(msgspec.json.encode(body, order="sorted"))
