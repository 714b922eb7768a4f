"""A cortex process that stops at a named crash point and waits to be killed.

Usage: crash_child.py POINT SKIP WORKDIR COMMANDS_JSON

Runs the commands (see child_common.run_commands). When the armed point is reached (after
SKIP earlier passes), prints `AT <point>` and sleeps; the parent then kills it with SIGKILL.
"""

from __future__ import annotations

import sys

from child_common import run_commands, stop_here


def main() -> None:
    point, skip, workdir, commands = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    from cortex.cases import _crash

    _crash.armed = point
    _crash.skip = skip
    _crash.action = stop_here
    run_commands(commands, workdir)


if __name__ == "__main__":
    main()
