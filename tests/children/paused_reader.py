"""A cortex reader that pauses after listing a directory holding a given entry.

Usage: paused_reader.py ENTRY WORKDIR ARGV_JSON

Fault injection (timing only): `os.listdir` is wrapped so that the first listing containing
ENTRY prints `PAUSED` and waits for one line on stdin before the reader goes on. The parent
changes the directory meanwhile, which widens a race window that is otherwise microseconds
long. Finally prints `EXIT <code>` and the command's stdout and stderr.
"""

from __future__ import annotations

import io
import json
import os
import sys


def main() -> None:
    entry, workdir, argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    real = os.listdir
    paused = [False]

    def listdir(path: str = ".") -> list[str]:
        names = real(path)
        if not paused[0] and entry in names:
            paused[0] = True
            sys.stdout.write("PAUSED\n")
            sys.stdout.flush()
            sys.stdin.readline()
        return names

    from child_common import cortex_call

    from cortex.main import main as _loaded  # noqa: F401 - the CLI is loaded first

    os.listdir = listdir  # type: ignore[assignment]  # fault injection: a pause
    out, err = io.StringIO(), io.StringIO()
    try:
        code = cortex_call([*argv, "--json"], workdir, out, err)
    except BaseException as exc:
        code = -1
        err.write(f"{type(exc).__name__}: {exc}")
    sys.stdout.write(f"EXIT {code}\n{out.getvalue()}{err.getvalue()}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
