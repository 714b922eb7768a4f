"""A configurable command verifier for the verification tests: runs a list of steps, then exits.

argv is a sequence of steps separated by `::`, for example

    verifier_steps.py sleep 2 :: append app.py "#x" :: exit 1

Steps (paths are relative to the working directory, which cortex sets to the workspace root):

- `append PATH TEXT`     append TEXT and a newline to PATH
- `log PATH`             append this process's argv (as JSON) to PATH
- `sleep SECONDS`        sleep
- `grandchild PIDFILE`   start `sleep 30` in this process group, write its pid to PIDFILE
- `escape PIDFILE`       start `sleep 30` in a new session holding our stdout, write its pid
- `cortex TASKFILE ARG...` run `python -m cortex ARG... --json`, `{task}` replaced by the id
                           read from TASKFILE; a failure exits 3
- `flood BYTES`          write BYTES bytes of filler lines to stdout
- `print TEXT`           write TEXT and a newline to stdout
- `if-exists PATH`       skip the remaining steps unless PATH exists
- `exit CODE`            exit with CODE
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _steps(argv: list[str]) -> list[list[str]]:
    steps: list[list[str]] = [[]]
    for arg in argv:
        if arg == "::":
            steps.append([])
        else:
            steps[-1].append(arg)
    return [step for step in steps if step]


def _run(step: list[str]) -> bool:
    """Run one step; False stops the sequence (a successful early end)."""
    name, args = step[0], step[1:]
    if name == "append":
        with open(args[0], "a", encoding="utf-8") as handle:
            handle.write(args[1] + "\n")
    elif name == "log":
        with open(args[0], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(sys.argv[1:]) + "\n")
    elif name == "sleep":
        time.sleep(float(args[0]))
    elif name in {"grandchild", "escape"}:
        child = subprocess.Popen(
            ["sleep", "30"],
            stdin=subprocess.DEVNULL,
            start_new_session=name == "escape",
        )
        with open(args[0], "w", encoding="utf-8") as handle:
            handle.write(str(child.pid))
    elif name == "cortex":
        with open(args[0], encoding="utf-8") as handle:
            task = handle.read().strip()
        command = [a.replace("{task}", task) for a in args[1:]]
        done = subprocess.run(
            [sys.executable, "-m", "cortex", *command, "--json"],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            sys.stderr.write(done.stdout.decode() + done.stderr.decode())
            sys.exit(3)
    elif name == "flood":
        total = int(args[0])
        chunk = b"0123456789abcde\n" * 4096
        while total > 0:
            piece = chunk[:total]
            sys.stdout.buffer.write(piece)
            total -= len(piece)
        sys.stdout.buffer.flush()
    elif name == "print":
        sys.stdout.write(args[0] + "\n")
        sys.stdout.flush()
    elif name == "if-exists":
        return os.path.exists(args[0])
    elif name == "exit":
        sys.exit(int(args[0]))
    else:
        sys.stderr.write(f"unknown step {name!r}\n")
        sys.exit(2)
    return True


def main() -> None:
    """Run every step in order."""
    for step in _steps(sys.argv[1:]):
        if not _run(step):
            break


if __name__ == "__main__":
    main()
