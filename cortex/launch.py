"""The console script's first step: the cheapest hooks go straight to their face.

A PostToolUse hook runs on every tool call an agent makes, so `cortex hook PostToolUse` (and
PostToolUseFailure, PreToolUse) must not pay for importing the CLI, or even `typing`
(docs/design/activity.md, section 3). Everything else is `cortex.main`'s.
"""

from __future__ import annotations

import os
import sys

CHEAP = ("PostToolUse", "PostToolUseFailure", "PreToolUse")


def entrypoint() -> int:
    """Run `cortex` with the process's own argv, environment and streams."""
    argv = sys.argv[1:]
    if len(argv) > 1 and argv[0] == "hook" and argv[1] in CHEAP:
        from cortex.hooks.capture import main as cheap

        return cheap(argv[1:], os.environ, sys.stdin.buffer, sys.stdout)
    _import_msgspec_lean()
    from cortex.main import entrypoint as cli

    return cli()


def _import_msgspec_lean() -> None:
    """Import msgspec without typing_extensions, which it takes only if it is installed.

    msgspec uses typing_extensions for `get_type_hints`, `Required` and `NotRequired`, and falls
    back to `typing`'s own, which on Python 3.11 and later serve every type Cortex declares. The
    MCP SDK installs typing_extensions, whose import pulls in inspect, ast, dis and tokenize: about
    10 ms of every call (docs/benchmarks.md). The block lasts for this one import, so a face that
    needs typing_extensions later in the process still gets it.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]
