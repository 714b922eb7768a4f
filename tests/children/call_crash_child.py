"""A cortex process that stops right before or after the Nth call of a function.

Usage: call_crash_child.py TARGET WHEN SKIP WORKDIR COMMANDS_JSON

TARGET is `module:function` (for example `os:link` or `cortex.cases.ledger:truncate`); WHEN is
`before` or `after`. The function is wrapped (fault injection only: the real function still
runs); after SKIP earlier calls, the wrapper prints `AT <target>` and sleeps until the parent
kills it with SIGKILL. This reaches the steps between crash points, such as the gap between the
link and the unlink of a new raw blob, or the middle of a recovery. Each command that succeeds
prints `ACK <envelope>`, like crash_child.py.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from child_common import run_commands, stop_here


def main() -> None:
    target, when, skip, workdir, commands = sys.argv[1:6]
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    real = getattr(module, attr)
    remaining = [int(skip)]

    def stop() -> None:
        stop_here(target)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        due = remaining[0] == 0
        remaining[0] -= 1
        if due and when == "before":
            stop()
        result = real(*args, **kwargs)
        if due and when == "after":
            stop()
        return result

    setattr(module, attr, wrapper)
    run_commands(commands, workdir)


if __name__ == "__main__":
    main()
