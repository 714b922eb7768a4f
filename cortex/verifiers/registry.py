"""Find the verifier for a requirement: built-ins first, then the `cortex.verifiers` group.

Built-ins are listed here (and in pyproject.toml's entry points, so the group describes them
too) so that resolving `command:unit` never scans the installed distributions' metadata, which
costs tens of milliseconds.
"""

from __future__ import annotations

from cortex.cases.errors import InvalidInputError
from cortex.verifiers.base import Verifier, split

GROUP = "cortex.verifiers"


def _builtin(kind: str) -> Verifier | None:
    if kind == "command":
        from cortex.verifiers.command import CommandVerifier

        return CommandVerifier()
    if kind == "pytest":
        from cortex.verifiers.pytest_junit import PytestVerifier

        return PytestVerifier()
    if kind == "scope":
        from cortex.verifiers.scope import ScopeVerifier

        return ScopeVerifier()
    return None


def resolve(requirement: str) -> Verifier:
    """The verifier for `requirement`, or invalid_input (exit 4) naming the known kinds."""
    kind, _ = split(requirement)
    found = _builtin(kind)
    if found is not None:
        return found
    from importlib.metadata import entry_points

    for entry in entry_points(group=GROUP):
        if entry.name != kind:
            continue
        try:
            loaded = entry.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is input, not a crash
            msg = f"the verifier plugin {entry.value!r} for {kind!r} failed to load: {exc}"
            raise InvalidInputError(msg) from None
        verifier = loaded() if isinstance(loaded, type) else loaded
        if not all(hasattr(verifier, attr) for attr in ("kind", "version", "check", "run")):
            msg = f"the verifier plugin {entry.value!r} does not implement the verifier protocol"
            raise InvalidInputError(msg)
        return verifier  # type: ignore[no-any-return]
    names = sorted({"command", "pytest", "scope"} | {e.name for e in entry_points(group=GROUP)})
    msg = f"unknown verifier {requirement!r} (known kinds: {', '.join(names)})"
    raise InvalidInputError(msg)
