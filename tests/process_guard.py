"""The `process` marker, kept honest: a test that starts a Python process must carry it.

Starting an interpreter (`python -m cortex`, `cortex serve`, a child script, a verifier written
in Python, pip, ruff, mypy) costs tens of milliseconds to seconds; git and other small programs
cost a few. `pytest -m "not slow and not process"` is the inner loop (docs/testing.md): it is
only as fast as this marker is true, so while a test without the marker sets up and runs, every
process start is watched, and one that runs an interpreter fails the test with the line to add.

The watch passes every call through unchanged: it looks at the argument vector and nothing else.
`CORTEX_TEST_PROCESS_LOG=FILE` makes it write the node ids of such tests to FILE instead of
failing them (how the markers were first placed).
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from collections.abc import Generator, Sequence
from typing import Any

import pytest

PYTHON = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*|cortex|pip[0-9.]*|mypy|ruff|pytest)")
"""Program names that start an interpreter (ruff is not Python, but as costly to start)."""

_started: list[str] = []
_watching = False


def starts_an_interpreter(args: Any, executable: Any) -> bool:
    """Whether a process started with `args` (and `executable`) runs an interpreter."""
    program = executable if executable is not None else _first(args)
    if program is None:
        return False
    name = os.path.basename(os.fsdecode(program))
    return os.fsdecode(program) == sys.executable or PYTHON.fullmatch(name) is not None


def _first(args: Any) -> str | bytes | None:
    if isinstance(args, str | bytes | os.PathLike):
        return os.fspath(args)
    if isinstance(args, Sequence) and args:
        first = args[0]
        return os.fspath(first) if isinstance(first, str | bytes | os.PathLike) else None
    return None


def _describe(args: Any) -> str:
    words = [os.fsdecode(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
    text = " ".join(words)
    return text if len(text) <= 120 else text[:117] + "..."


_execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
_fork = pty.fork


def _watched_execute_child(
    self: subprocess.Popen[Any], args: Any, executable: Any, *rest: Any
) -> Any:
    if _watching and starts_an_interpreter(args, executable):
        _started.append(_describe(args))
    return _execute_child(self, args, executable, *rest)


def _watched_fork() -> tuple[int, int]:
    if _watching:
        _started.append("pty.fork() (a command in a pseudo-terminal)")
    return _fork()


def pytest_configure(config: pytest.Config) -> None:
    del config
    subprocess.Popen._execute_child = _watched_execute_child  # type: ignore[attr-defined]
    pty.fork = _watched_fork


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    global _watching  # noqa: PLW0603 - one flag for the one test running in this process
    _started.clear()
    _watching = item.get_closest_marker("process") is None
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    global _watching  # noqa: PLW0603
    try:
        result = yield
    except BaseException:
        # The test's own failure is what it reports; the log still learns what it started.
        _watching = False
        _check(item, failing=True)
        raise
    _watching = False
    _check(item, failing=False)
    return result


def _check(item: pytest.Item, *, failing: bool) -> None:
    """Log or fail a test that started an interpreter without the marker."""
    if not _started:
        return
    started = sorted(set(_started))
    _started.clear()
    log = os.environ.get("CORTEX_TEST_PROCESS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(item.nodeid + "\n")
    elif not failing:
        pytest.fail(
            f"{item.nodeid} starts a Python process but is not marked `process`:\n  "
            + "\n  ".join(started)
            + "\nmark it @pytest.mark.process (a module: pytestmark = pytest.mark.process)",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    global _watching  # noqa: PLW0603
    del item
    _watching = False  # a setup that failed never reached the check; teardown is not watched
    return (yield)
