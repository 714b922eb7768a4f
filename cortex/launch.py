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
    from cortex.main import entrypoint as cli

    return cli()
