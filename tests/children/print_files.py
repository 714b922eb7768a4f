"""A command verifier that prints two files: the first to stdout, the second to stderr.

    print_files.py STDOUT_FILE STDERR_FILE [EXIT_FILE]

It exits with the number EXIT_FILE holds (0 without one).
The bytes go out as they are, in pipe-sized writes, so a test can place values exactly where
the runner cuts long output (tests/test_secret_corpus.py).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    for path, fd in zip(sys.argv[1:3], (1, 2), strict=True):
        with open(path, "rb") as handle:
            data = handle.read()
        for at in range(0, len(data), 4096):
            os.write(fd, data[at : at + 4096])
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as handle:
            return int(handle.read())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
