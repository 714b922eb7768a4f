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

from cortex.cases.bounds import RAW_BLOB_MAX
from cortex.cases.errors import CortexError, InvalidInputError
from cortex.cases.records import encode
from cortex.cli.parser import HelpRequested, Parsed, command_name, parse
from cortex.kernel.envelope import Envelope, Result, failure, success

EXIT_INTERRUPTED = 130


class _InternalError(CortexError):
    """An unexpected exception, reported without a traceback."""


def _read_stdin(stdin: IO[bytes]) -> bytes:
    data = stdin.read(RAW_BLOB_MAX + 1)
    if len(data) > RAW_BLOB_MAX:
        raise InvalidInputError(f"stdin is over the {RAW_BLOB_MAX}-byte raw limit")
    return data


def _dispatch(
    parsed: Parsed, env: Mapping[str, str], cwd: str, stdin: IO[bytes], seen: dict[str, Any]
) -> Result:
    from cortex.kernel.context import Kernel

    kernel = Kernel(cwd, env, default_actor=env.get("CORTEX_ACTOR") or "cli")
    seen["redactor"] = kernel.redactor
    values: dict[str, Any] = parsed.values
    command = parsed.command.name
    if command == "case.open":
        from cortex.kernel.open_case import open_case

        return open_case(
            kernel,
            goal=values["goal"],
            mode=values["mode"],
            risk=values["risk"],
            surfaces=values["surface"],
            criteria=values["criterion"],
            idempotency_key=values["idempotency_key"],
            actor=values["actor"],
        )
    if command == "case.list":
        from cortex.kernel.status import list_cases

        return list_cases(kernel, limit=values["limit"])
    if command == "case.status":
        from cortex.kernel.status import status

        return status(kernel, values["task"])
    if command == "case.evidence.add":
        from cortex.kernel.evidence import add_evidence, read_raw_file

        raw = None
        if values["raw_file"] == "-":
            raw = _read_stdin(stdin)
        elif values["raw_file"] is not None:
            raw = read_raw_file(os.path.join(cwd, values["raw_file"]))
        return add_evidence(
            kernel,
            values["task"],
            claim=values["claim"],
            kind=values["kind"],
            tool=values["source"],
            uri=values["uri"],
            origin=values["origin"],
            file=values["file"],
            line=values["line"],
            symbol=values["symbol"],
            confidence=values["confidence"],
            sensitive=values["sensitive"],
            raw=raw,
            derived_from=values["derived_from"],
            actor=values["actor"],
            expected_revision=values["expect_revision"],
        )
    if command == "case.note":
        from cortex.kernel.evidence import add_note

        return add_note(
            kernel,
            values["task"],
            text=values["text"],
            origin=values["origin"],
            actor=values["actor"],
            expected_revision=values["expect_revision"],
        )
    if command == "case.read-evidence":
        from cortex.kernel.evidence import read_evidence

        return read_evidence(kernel, values["task"], values["evidence"])
    if command == "case.audit":
        from cortex.kernel.audit import audit

        return Result(data=audit(kernel, values["task"]))
    msg = f"unknown command {command!r}"  # pragma: no cover - the parser refuses it first
    raise InvalidInputError(msg)


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
        envelope = failure(name, exc, data=getattr(exc, "report", None))
        exit_status = exc.exit_status
    except KeyboardInterrupt:
        envelope = failure(name, _InternalError("interrupted"))
        exit_status = EXIT_INTERRUPTED
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
