"""What the crash children share: run a list of cortex commands, acknowledging each one.

Each command runs through the real CLI code path in-process. After a success the child prints
`ACK <envelope>`; a failure prints `FAIL <code> <envelope>` and exits 3; the end prints `DONE`.
The parent treats every ACKed record as acknowledged, which is what the crash tests check.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time


def stop_here(name: str) -> None:
    """Report reaching a crash point and wait for the parent's SIGKILL."""
    sys.stdout.write(f"AT {name}\n")
    sys.stdout.flush()
    time.sleep(120)  # the parent kills us long before this ends
    os._exit(99)


def run_commands(commands: str, workdir: str) -> None:
    """Run each argv of the JSON list `commands`, printing ACK/FAIL lines, then DONE."""
    from cortex.main import main as cortex_main

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
