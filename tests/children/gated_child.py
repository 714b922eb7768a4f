"""A cortex process that waits at a gate, runs one command, and can stop itself at a crash point.

Usage: gated_child.py GATE WORKDIR ARGV_JSON [POINT SKIP]

Imports the CLI first and prints `READY`, then waits until the file GATE exists, so that the
parent can release several children at nearly the same instant (a barrier), and prints
`GO <monotonic seconds>`. It then runs ARGV through the real CLI code path in-process, with
`--json` appended.

If POINT is given, that crash point is armed (after SKIP earlier passes) with an action that
prints `STOPPED <point>` and stops this very process with SIGSTOP (fault injection: a holder
suspended mid-commit); it carries on where it stopped when the parent sends SIGCONT.

Finally prints `OUT <envelope>` and exits with the command's exit status.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time


def stop_self(name: str) -> None:
    """Report the crash point, then suspend this process until SIGCONT."""
    sys.stdout.write(f"STOPPED {name}\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGSTOP)


def main() -> None:
    gate, workdir, argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    from child_common import cortex_call

    from cortex.main import main as _loaded  # noqa: F401 - the CLI is loaded first

    if len(sys.argv) > 4:
        from cortex.cases import _crash

        _crash.armed = sys.argv[4]
        _crash.skip = int(sys.argv[5])
        _crash.action = stop_self
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    while not os.path.exists(gate):
        time.sleep(0.0002)
    sys.stdout.write(f"GO {time.monotonic():.6f}\n")
    sys.stdout.flush()
    out, err = io.StringIO(), io.StringIO()
    code = cortex_call([*argv, "--json"], workdir, out, err)
    sys.stderr.write(err.getvalue())
    sys.stdout.write("OUT " + out.getvalue())
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
