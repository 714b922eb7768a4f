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
from typing import IO

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from stand_ins import answering, leased, remember


def cortex_call(
    argv: list[str], workdir: str, stdout: IO[str], stderr: IO[str] | None = None
) -> int:
    """Run one cortex command in-process as the suite's harness does (tests/stand_ins.py).

    The environment is this process's, with the task's lease token from the book when the
    command gives none; a `decision answer` first opts the test's machine in. stdin is empty,
    never the terminal the suite may have been started from.
    """
    from cortex.main import main as cortex_main

    answering(os.environ, argv)
    env = leased(os.environ, argv)
    code = cortex_main(argv, env=env, cwd=workdir, stdin=io.BytesIO(), stdout=stdout, stderr=stderr)
    if code == 0:
        remember(os.environ, argv, stdout.getvalue() if isinstance(stdout, io.StringIO) else "")
    return code


def stop_here(name: str) -> None:
    """Report reaching a crash point and wait for the parent's SIGKILL."""
    sys.stdout.write(f"AT {name}\n")
    sys.stdout.flush()
    time.sleep(120)  # the parent kills us long before this ends
    os._exit(99)


def run_commands(commands: str, workdir: str) -> None:
    """Run each argv of the JSON list `commands`, printing ACK/FAIL lines, then DONE."""
    for argv in json.loads(commands):
        out = io.StringIO()
        code = cortex_call([*argv, "--json"], workdir, out)
        if code != 0:
            sys.stdout.write(f"FAIL {code} {out.getvalue()}")
            sys.stdout.flush()
            os._exit(3)
        sys.stdout.write("ACK " + out.getvalue())
        sys.stdout.flush()
    sys.stdout.write("DONE\n")
    sys.stdout.flush()
