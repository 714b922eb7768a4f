"""The raw output an evidence record keeps, from whichever face gave it.

One rule for every face: a record keeps at most one raw output, given as a file (or `-`, the
caller's standard input), as text, or as a directory; each is bounded before it is kept. The
CLI gives paths relative to its working directory; the MCP server confines a directory to the
workspace it serves, since it may run with more access than the agent calling it.
"""

from __future__ import annotations

import os
import stat
from typing import IO, TYPE_CHECKING

from cortex.cases.bounds import RAW_BLOB_MAX
from cortex.cases.errors import ArgumentError, InvalidInputError

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel
    from cortex.workspace.raw_tree import Captured


def gather(
    kernel: Kernel,
    *,
    raw_file: str | None = None,
    raw: str | None = None,
    raw_dir: str | None = None,
    stdin: IO[bytes] | None = None,
    cwd: str | None = None,
    confine: bool = False,
) -> tuple[bytes | None, Captured | None]:
    """The raw bytes or directory tree to keep (or neither), refused if more than one is given.

    `raw_file` `-` reads `stdin`; relative paths resolve against `cwd` (default: the workspace
    root). With `confine`, `raw_dir` must lie inside the workspace.
    """
    given = [
        name
        for name, value in (("raw_file", raw_file), ("raw", raw), ("raw_dir", raw_dir))
        if value is not None
    ]
    if len(given) > 1:
        first, second = given[:2]
        msg = "{%s} and {%s} cannot be combined: give one raw output" % (first, second)  # noqa: UP031
        raise ArgumentError(msg, first, second)
    base = kernel.workspace.root if cwd is None else cwd
    if raw_file == "-":
        return read_stream(stdin), None
    if raw_file is not None:
        return read_file(os.path.join(base, raw_file)), None
    if raw is not None:
        data = raw.encode("utf-8", "surrogateescape")
        if len(data) > RAW_BLOB_MAX:
            raise ArgumentError(f"{{raw}} is over the {RAW_BLOB_MAX}-byte raw limit", "raw")
        return data, None
    if raw_dir is not None:
        from cortex.workspace.raw_tree import capture

        directory = inside_workspace(kernel, raw_dir) if confine else os.path.join(base, raw_dir)
        return None, capture(directory)
    return None, None


def read_stream(stream: IO[bytes] | None) -> bytes:
    """Standard input as raw output, bounded (nothing to read is empty output)."""
    if stream is None:
        return b""
    data = stream.read(RAW_BLOB_MAX + 1)
    if len(data) > RAW_BLOB_MAX:
        raise InvalidInputError(f"stdin is over the {RAW_BLOB_MAX}-byte raw limit")
    return data


def inside_workspace(kernel: Kernel, relative: str) -> str:
    """`raw_dir` resolved in the workspace, refused if it is absolute or leads out of it.

    A face that may run with more access than its caller (the MCP server) must not let an
    argument reach past the repository it serves (through `..`, an absolute path or a symlinked
    parent).
    """
    from cortex.cases.tree import member_path

    member_path(relative.removesuffix("/"), "raw_dir")  # relative, no `..`, no controls
    root = os.path.realpath(kernel.workspace.root)
    target = os.path.realpath(os.path.join(root, relative))
    if target != root and not target.startswith(root + os.sep):
        msg = f"raw_dir {relative!r} leads out of the workspace"
        raise InvalidInputError(msg)
    return os.path.join(root, relative)


def read_file(path: str) -> bytes:
    """Read a regular file for `--raw-file`, bounded; FIFOs, devices and directories refused."""
    try:
        # O_NONBLOCK: opening a FIFO must not hang waiting for a writer before we refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ArgumentError(f"{{raw_file}} {path!r} does not exist", "raw_file") from None
    except OSError as exc:
        raise ArgumentError(
            f"{{raw_file}} {path!r} cannot be read ({exc.strerror})", "raw_file"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArgumentError(f"{{raw_file}} {path!r} is not a regular file", "raw_file")
        if info.st_size > RAW_BLOB_MAX:
            msg = f"{{raw_file}} is {info.st_size} bytes, over the {RAW_BLOB_MAX}-byte limit"
            raise ArgumentError(msg, "raw_file")
        try:
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(RAW_BLOB_MAX + 1)
        except OSError as exc:
            msg = f"{{raw_file}} {path!r} cannot be read ({exc.strerror})"
            raise ArgumentError(msg, "raw_file") from None
    finally:
        os.close(fd)
    if len(data) > RAW_BLOB_MAX:
        raise ArgumentError(f"{{raw_file}} grew past the {RAW_BLOB_MAX}-byte limit", "raw_file")
    return data
