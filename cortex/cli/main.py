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

from cortex.cases.bounds import RAW_BLOB_MAX
from cortex.cases.errors import CortexError, InvalidInputError
from cortex.cases.records import encode
from cortex.cli.parser import build_parser, command_name
from cortex.kernel.envelope import Envelope, Result, failure, success

EXIT_INTERRUPTED = 130


class _InternalError(CortexError):
    """An unexpected exception, reported without a traceback."""


def _read_stdin(stdin: IO[bytes]) -> bytes:
    data = stdin.read(RAW_BLOB_MAX + 1)
    if len(data) > RAW_BLOB_MAX:
        raise InvalidInputError(f"stdin is over the {RAW_BLOB_MAX}-byte raw limit")
    return data


def _dispatch(args: Any, env: Mapping[str, str], cwd: str, stdin: IO[bytes]) -> Result:
    from cortex.kernel.context import Kernel

    kernel = Kernel(cwd, env, default_actor=env.get("CORTEX_ACTOR") or "cli")
    command = args.command
    if command == "open":
        from cortex.kernel.open_case import open_case

        return open_case(
            kernel,
            goal=args.goal,
            mode=args.mode,
            risk=args.risk,
            surfaces=args.surface,
            criteria=args.criterion,
            idempotency_key=args.idempotency_key,
            actor=args.actor,
        )
    if command == "list":
        from cortex.kernel.status import list_cases

        return list_cases(kernel, limit=args.limit)
    if command == "status":
        from cortex.kernel.status import status

        return status(kernel, args.task)
    if command == "evidence":
        from cortex.kernel.evidence import add_evidence, read_raw_file

        raw = None
        if args.raw_file == "-":
            raw = _read_stdin(stdin)
        elif args.raw_file is not None:
            raw = read_raw_file(os.path.join(cwd, args.raw_file))
        return add_evidence(
            kernel,
            args.task,
            claim=args.claim,
            kind=args.kind,
            tool=args.source,
            uri=args.uri,
            origin=args.origin,
            file=args.file,
            line=args.line,
            symbol=args.symbol,
            confidence=args.confidence,
            sensitive=args.sensitive,
            raw=raw,
            derived_from=args.derived_from,
            actor=args.actor,
            expected_revision=args.expect_revision,
        )
    if command == "note":
        from cortex.kernel.evidence import add_note

        return add_note(
            kernel,
            args.task,
            text=args.text,
            origin=args.origin,
            actor=args.actor,
            expected_revision=args.expect_revision,
        )
    if command == "read-evidence":
        from cortex.kernel.evidence import read_evidence

        return read_evidence(kernel, args.task, args.evidence)
    if command == "audit":
        from cortex.kernel.audit import audit

        return Result(data=audit(kernel, args.task))
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
    try:
        try:
            args = build_parser().parse_args(list(argv))
        except SystemExit as exc:  # --help and --version print and exit on their own
            return int(exc.code or 0)
        as_json = bool(getattr(args, "json", False) or args.top_json)
        if getattr(args, "json", False) and args.top_json:
            _duplicate("--json")
        workspace = getattr(args, "workspace", None)
        if workspace is not None and args.top_workspace is not None:
            _duplicate("-C/--workspace")
        base = os.getcwd() if cwd is None else cwd
        directory = os.path.join(base, workspace or args.top_workspace or ".")
        envelope = success(name, _dispatch(args, env, directory, stdin))
    except CortexError as exc:
        envelope = failure(name, exc, data=getattr(exc, "report", None))
        exit_status = exc.exit_status
    except KeyboardInterrupt:
        envelope = failure(name, _InternalError("interrupted"))
        exit_status = EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the contract is an envelope, never a traceback
        if env.get("CORTEX_DEBUG"):
            import traceback

            traceback.print_exc(file=stderr)
        envelope = failure(name, _InternalError(f"internal error: {type(exc).__name__}: {exc}"))
        exit_status = _InternalError.exit_status
    _emit(envelope, as_json, stdout, stderr, env)
    return exit_status


def _duplicate(option: str) -> None:
    from cortex.cli.parser import UsageError

    raise UsageError(f"cortex: {option} is given more than once")


def _emit(
    envelope: Envelope, as_json: bool, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> None:
    try:
        if as_json:
            stdout.write(encode(envelope).decode() + "\n")
            stdout.flush()
            return
        from cortex.cli.render import render

        try:
            render(envelope, stdout, stderr, env)
        except Exception as exc:  # noqa: BLE001 - a rendering bug must not hide the answer
            stderr.write(f"cortex: could not render the result ({exc}); here it is as JSON:\n")
            stdout.write(encode(envelope).decode() + "\n")
    except BrokenPipeError:
        # The reader went away (`cortex ... | head`): nothing left to tell it.
        pass


def entrypoint() -> int:
    """The console script: run with the process's own argv, environment and streams."""
    return main(sys.argv[1:])
