"""A cortex process that pauses right after the Nth call of a function, until told to go on.

Usage: pause_after_call.py TARGET NTH WORKDIR ARGV_JSON

TARGET is `module:attribute.path` (for example `cortex.cases.store:CaseStore.read_case`). The
function is wrapped (fault injection, timing only: the real function runs unchanged); when its
NTH call (counting from 1) has returned, the child prints `PAUSED` and waits for one line on
stdin. The parent changes the case meanwhile, which widens a race window that is otherwise
microseconds long. Finally prints `OUT <envelope>` and exits with the command's status.
"""

from __future__ import annotations

import importlib
import io
import json
import sys
from typing import Any


def main() -> None:
    target, nth, workdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    argv = json.loads(sys.argv[4])
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    real = getattr(owner, attr)
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        calls[0] += 1
        if calls[0] == nth:
            sys.stdout.write("PAUSED\n")
            sys.stdout.flush()
            sys.stdin.readline()
        return result

    setattr(owner, attr, wrapper)
    from child_common import cortex_call

    from cortex.main import main as _loaded  # noqa: F401 - the CLI is loaded first

    out, err = io.StringIO(), io.StringIO()
    code = cortex_call([*argv, "--json"], workdir, out, err)
    sys.stderr.write(err.getvalue())
    sys.stdout.write("OUT " + out.getvalue())
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
