"""A person at a terminal forgetting one record, in a real process that may stop at a crash point.

Usage: forget_child.py POINT SKIP WORKDIR TASK ID [REMOVE]

Runs the forget use case (or, with REMOVE, `case rm --force`) as the CLI does at a terminal: the
channel is `cli-tty` and the confirmation types the id back. POINT `-` arms nothing. Prints
`AT <point>` and waits to be killed when the armed point is reached, `ACK <envelope data>` after
a success, `FAIL <code> <message>` after a refusal.
"""

from __future__ import annotations

import json
import os
import sys

from child_common import stop_here


def main() -> None:
    point, skip, workdir, task, target = sys.argv[1:6]
    remove = len(sys.argv) > 6
    import msgspec

    from cortex.cases import _crash
    from cortex.cases.errors import CortexError
    from cortex.kernel.kernel import Kernel

    if point != "-":
        _crash.armed = point
        _crash.skip = int(skip)
        _crash.action = stop_here
    kernel = Kernel(workdir, os.environ, default_actor="alice", via="cli-tty")
    try:
        if remove:
            from cortex.kernel.retention.archive import remove as remove_case

            result = remove_case(kernel, task, force=True, confirm=lambda asked: asked.task_id)
        else:
            from cortex.kernel.retention.forget import forget

            result = forget(
                kernel, task, target, reason="pasted by mistake", confirm=lambda asked: asked.id
            )
    except CortexError as exc:
        sys.stdout.write(f"FAIL {exc.code} {json.dumps(exc.message)}\n")
        sys.stdout.flush()
        os._exit(3)
    sys.stdout.write("ACK " + msgspec.json.encode(result.data).decode() + "\n")
    sys.stdout.write("DONE\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
