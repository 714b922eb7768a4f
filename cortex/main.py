"""`cortex`: parse, call the kernel, answer with one envelope (`--json`) or text for people.

With the MCP server, this is the only place that reads the process's environment; errors become
envelopes and exit codes in `cortex.kernel.surface`, which both surfaces share. `main(argv)`
takes everything explicitly so tests can run it in-process; `entrypoint()` wires it to the real
process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING

from cortex.cases.errors import CortexError
from cortex.cli.parser import HelpRequested, Parsed, command_name, parse
from cortex.kernel.envelope import Envelope, Result
from cortex.kernel.surface import Seen, execute, in_kernel, parse_refusal, to_json

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel


def _body(
    parsed: Parsed,
    env: Mapping[str, str],
    cwd: str,
    streams: tuple[IO[bytes], IO[str], IO[str]],
) -> Callable[[Seen], Result]:
    """The use case a parsed command line asks for, as a body for `execute`."""
    if parsed.command.name == "doctor":
        # Doctor builds its own kernel: a broken configuration is one of the things it reports.
        def run_doctor(_seen: Seen) -> Result:
            from cortex.kernel.host.doctor import doctor

            return doctor(cwd, env)

        return run_doctor

    def run(kernel: Kernel) -> Result:
        from cortex.cli.commands import HANDLERS, Call

        handler = HANDLERS[parsed.command.name]
        stdin, stdout, stderr = streams
        call = Call(
            kernel, parsed.values, cwd=cwd, stdin=stdin, env=env, stdout=stdout, stderr=stderr
        )
        return handler(call)

    return in_kernel(cwd, env, env.get("CORTEX_ACTOR") or "cli", run)


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
    try:
        parsed = parse(argv)
    except HelpRequested as done:
        stdout.write(done.text + "\n")
        return 0
    except CortexError as exc:
        base = os.getcwd() if cwd is None else cwd
        _emit(parse_refusal(name, exc, base, env), "--json" in argv, stdout, stderr, env)
        return exc.exit_status
    base = os.getcwd() if cwd is None else cwd
    directory = os.path.join(base, parsed.workspace or ".")
    if parsed.command.name == "serve":
        # stdout belongs to the protocol from here on: the server reports on stderr.
        from cortex.mcp.server import serve

        return serve(directory, env, stderr=stderr)
    envelope, exit_status = execute(
        name, _body(parsed, env, directory, (stdin, stdout, stderr)), env=env, debug=stderr
    )
    _emit(envelope, parsed.json, stdout, stderr, env)
    return exit_status


def _emit(
    envelope: Envelope, as_json: bool, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> None:
    try:
        if as_json:
            stdout.write(to_json(envelope) + "\n")
            stdout.flush()
            return
        from cortex.cli.render import render

        try:
            render(envelope, stdout, stderr, env)
        except Exception as exc:  # noqa: BLE001 - a rendering bug must not hide the answer
            stderr.write(f"cortex: could not render the result ({exc!r}); here it is as JSON:\n")
            stdout.write(to_json(envelope) + "\n")
    except BrokenPipeError:
        # The reader went away (`cortex ... | head`): nothing left to tell it.
        pass


def entrypoint() -> int:
    """The console script: run with the process's own argv, environment and streams."""
    return main(sys.argv[1:])
