"""A cortex process that stops at a named crash point and waits to be killed.

Usage: crash_child.py POINT SKIP WORKDIR COMMANDS_JSON

Runs each command (a list of argv lists) through the real CLI code path, printing
`ACK <envelope>` after each one that succeeded. When the armed point is reached (after SKIP
earlier passes), prints `AT <point>` and sleeps; the parent then kills it with SIGKILL.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time


def main() -> None:
    point, skip, workdir, commands = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    from cortex.cases import _crash
    from cortex.cli.main import main as cortex_main

    def stop(name: str) -> None:
        sys.stdout.write(f"AT {name}\n")
        sys.stdout.flush()
        time.sleep(120)  # the parent kills us long before this ends
        os._exit(99)

    _crash.armed = point
    _crash.skip = skip
    _crash.action = stop
    for argv in json.loads(commands):
        out = io.StringIO()
        code = cortex_main([*argv, "--json"], env=os.environ, cwd=workdir, stdout=out)
        if code != 0:
            sys.stdout.write(f"FAIL {code} {out.getvalue()}")
            sys.stdout.flush()
            os._exit(3)
        sys.stdout.write("ACK " + out.getvalue())
        sys.stdout.flush()
    sys.stdout.write("DONE\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
