"""`cortex`: parse, call the kernel, answer with one envelope (`--json`) or text for people.

This is the only place that maps errors to exit codes and the only place (with the MCP server)
that reads the environment. `main(argv)` takes everything explicitly so tests can run it
in-process; `entrypoint()` wires it to the real process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

import msgspec

from cortex.cases.errors import CortexError
from cortex.cases.records import encode
from cortex.cli.parser import HelpRequested, Parsed, command_name, parse
from cortex.kernel.envelope import Envelope, Result, failure, success

EXIT_INTERRUPTED = 130


class _InternalError(CortexError):
    """An unexpected exception, reported without a traceback."""


def _dispatch(
    parsed: Parsed, env: Mapping[str, str], cwd: str, stdin: IO[bytes], seen: dict[str, Any]
) -> Result:
    from cortex.cli.commands import HANDLERS, Call
    from cortex.kernel.context import Kernel

    if parsed.command.name == "doctor":
        # Doctor builds its own kernel: a broken configuration is one of the things it reports.
        from cortex.kernel.doctor import doctor

        return doctor(cwd, env)
    kernel = Kernel(cwd, env, default_actor=env.get("CORTEX_ACTOR") or "cli")
    seen["redactor"] = kernel.redactor
    handler = HANDLERS[parsed.command.name]
    result = handler(Call(kernel, parsed.values, cwd=cwd, stdin=stdin, env=env))
    # An answer echoes input only as the store keeps it: redacted, like everything written.
    from cortex.cases.scrub import scrub_value

    result.data = scrub_value(result.data, kernel.redactor)
    result.actions = scrub_value(result.actions, kernel.redactor)
    return result


def main(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run one `cortex` command and return its exit status."""
    env = os.environ if env is None else env
    stdin = sys.stdin.buffer if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    name = command_name(argv)
    as_json = "--json" in argv
    exit_status = 0
    seen: dict[str, Any] = {}
    try:
        try:
            parsed = parse(argv)
        except HelpRequested as done:
            stdout.write(done.text + "\n")
            return 0
        as_json = parsed.json
        base = os.getcwd() if cwd is None else cwd
        directory = os.path.join(base, parsed.workspace or ".")
        envelope = success(name, _dispatch(parsed, env, directory, stdin, seen))
    except CortexError as exc:
        exc.message = _redact(exc.message, seen)
        envelope = failure(
            name,
            exc,
            data=_redacted(getattr(exc, "report", None), seen),
            actions=_redacted(getattr(exc, "actions", None), seen),
        )
        exit_status = exc.exit_status
    except KeyboardInterrupt as exc:
        # Ctrl-C, or SIGTERM during a verifier run (which carries its own status, 143).
        envelope = failure(name, _InternalError("interrupted"))
        exit_status = int(getattr(exc, "exit_status", EXIT_INTERRUPTED))
    except Exception as exc:  # noqa: BLE001 - the contract is an envelope, never a traceback
        if env.get("CORTEX_DEBUG"):
            import traceback

            traceback.print_exc(file=stderr)
        message = _redact(f"internal error: {type(exc).__name__}: {exc}", seen)
        envelope = failure(name, _InternalError(message))
        exit_status = _InternalError.exit_status
    _emit(envelope, as_json, stdout, stderr, env)
    return exit_status


def _redact(message: str, seen: dict[str, Any]) -> str:
    """Error messages can quote input; they get the same redaction as stored text."""
    redactor = seen.get("redactor")
    if redactor is None:
        from cortex.cases.redact import Redactor

        redactor = Redactor()
    clean: str = redactor(message)
    return clean


def _redacted(value: Any, seen: dict[str, Any]) -> Any:
    """A failure's actions and report, redacted like a success's data."""
    if value is None:
        return None
    from cortex.cases.redact import Redactor
    from cortex.cases.scrub import scrub_value

    return scrub_value(value, seen.get("redactor") or Redactor())


def _printable(value: Any) -> Any:
    """Replace what cannot be written as UTF-8 (undecodable path bytes) with U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _encode(envelope: Envelope) -> str:
    try:
        return encode(envelope).decode()
    except (msgspec.EncodeError, UnicodeError):
        return msgspec.json.encode(_printable(msgspec.to_builtins(envelope))).decode()


def _emit(
    envelope: Envelope, as_json: bool, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> None:
    try:
        if as_json:
            stdout.write(_encode(envelope) + "\n")
            stdout.flush()
            return
        from cortex.cli.render import render

        try:
            render(envelope, stdout, stderr, env)
        except Exception as exc:  # noqa: BLE001 - a rendering bug must not hide the answer
            stderr.write(f"cortex: could not render the result ({exc!r}); here it is as JSON:\n")
            stdout.write(_encode(envelope) + "\n")
    except BrokenPipeError:
        # The reader went away (`cortex ... | head`): nothing left to tell it.
        pass


def entrypoint() -> int:
    """The console script: run with the process's own argv, environment and streams."""
    return main(sys.argv[1:])
