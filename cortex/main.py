"""The process's edge: read argv, the environment and the streams, and hand them to a face.

`cortex serve` goes to the MCP server, `cortex studio` to the board and `cortex case report` to
the report face; every other command is the CLI's: parse, call the kernel, answer with one
envelope (`--json`) or text for people. This launcher sits above the faces so that none of
them imports another. With the MCP server, it is
the only place that reads the process's environment; errors become envelopes and exit codes in
`cortex.kernel.surface`, which every face shares. `main(argv)` takes everything explicitly so
tests can run it in-process; `entrypoint()` wires it to the real process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    # The CLI's modules load in `main`, after `hook` has gone its own way: a hook runs on every
    # tool call of an agent and pays for none of them (docs/design/hosts.md, section 8).
    from cortex.cli.live import Reporter
    from cortex.cli.parser import Parsed
    from cortex.kernel.envelope import Envelope, Result
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.progress import Progress
    from cortex.kernel.surface import Seen

LIVE = frozenset({"case.verify", "case.share", "case.fetch", "recall.reindex", "recall.rebuild"})
"""Commands that report progress (`cortex.kernel.progress`) for a live line at a terminal."""


def _body(
    parsed: Parsed,
    env: Mapping[str, str],
    cwd: str,
    streams: tuple[IO[bytes], IO[str], IO[str]],
    progress: Progress | None = None,
) -> Callable[[Seen], Result]:
    """The use case a parsed command line asks for, as a body for `execute`."""
    from cortex.kernel.host_session import default_actor
    from cortex.kernel.surface import in_kernel

    if parsed.command.name == "studio":
        # Another face: the launcher hands the kernel to it; the CLI never imports the studio.
        def run_studio(kernel: Kernel) -> Result:
            from cortex.studio.launch import launch

            values = parsed.values
            refresh, repo, query = values["refresh"], values["repo"], values["query"]
            return launch(
                kernel,
                refresh=None if refresh is None else str(refresh),
                streams=streams,
                active=bool(values["active"]),
                repo=None if repo is None else str(repo),
                query=None if query is None else str(query),
            )

        return in_kernel(cwd, env, default_actor(env, "cli"), run_studio, via="studio")
    if parsed.command.name == "case.report":
        # The report face writes the page; the launcher hands it the kernel, as for the studio.
        # It writes no case record, so it has no channel to stamp.
        def run_report(kernel: Kernel) -> Result:
            from cortex.report.command import run

            return run(kernel, parsed.values, cwd=cwd)

        return in_kernel(cwd, env, default_actor(env, "cli"), run_report)
    if parsed.command.name == "doctor":
        # Doctor builds its own kernel: a broken configuration is one of the things it reports.
        def run_doctor(_seen: Seen) -> Result:
            from cortex.kernel.host.doctor import doctor

            return doctor(cwd, env)

        return run_doctor

    def run(kernel: Kernel) -> Result:
        from cortex.cli.commands import Call, handler

        name = parsed.command.name
        stdin, stdout, stderr = streams
        call = Call(
            kernel,
            parsed.values,
            command=name,
            cwd=cwd,
            stdin=stdin,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
        return handler(name)(call)

    from cortex.cli.terminal import channel

    # How the command arrived: a person at its terminal, or not (docs/design/trust.md).
    via = channel(streams[0])
    return in_kernel(
        cwd, env, default_actor(env, "cli"), run, progress=progress, via=via, stdin=streams[0]
    )


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _reporter(parsed: Parsed, stdout: IO[str], stderr: IO[str]) -> Reporter | None:
    """The live line and `--follow`'s lines for a long command, or None when nothing is shown.

    Nothing is live unless stdout is a terminal, and never with `--json` or `--quiet`, so
    piped and JSON output stay exactly what they were. Followed lines go above the live line,
    or to stderr when nothing is live.
    """
    if parsed.command.name not in LIVE:
        return None
    live = _is_terminal(stdout) and not parsed.json and not parsed.quiet
    follow = bool(parsed.values.get("follow"))
    if not (live or follow):
        return None
    from cortex.cli.live import Reporter

    return Reporter(
        stdout if live else None, follow=(stdout if live else stderr) if follow else None
    )


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
    if argv[:1] == ["hook"]:
        # An agent host's hook: its own face, its own answer format, and it never fails.
        from cortex.launch import CHEAP

        if len(argv) > 1 and argv[1] in CHEAP:
            from cortex.hooks.capture import main as cheap

            return cheap(list(argv[1:]), env, stdin, stdout)
        from cortex.hooks.entry import run

        return run(list(argv[1:]), env, stdin, stdout, stderr)
    from cortex.cli.parser import HelpRequested, command_name, parse, spelling
    from cortex.kernel.errors import CortexError
    from cortex.kernel.surface import execute, parse_refusal

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
    reporter = _reporter(parsed, stdout, stderr)
    body = _body(
        parsed,
        env,
        directory,
        (stdin, stdout, stderr),
        progress=None if reporter is None else reporter.progress,
    )
    if reporter is None:
        envelope, exit_status = execute(
            name, body, env=env, debug=stderr, spelling=spelling(parsed.command)
        )
    else:
        with reporter:  # the live line is gone before the answer is printed
            envelope, exit_status = execute(
                name, body, env=env, debug=stderr, spelling=spelling(parsed.command)
            )
    _emit(envelope, parsed.json, stdout, stderr, env)
    return exit_status


def _emit(
    envelope: Envelope, as_json: bool, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> None:
    from cortex.kernel.surface import to_json

    try:
        if as_json:
            stdout.write(to_json(envelope) + "\n")
            stdout.flush()
            return
        if envelope.ok and envelope.command == "completion":
            # Asked on every <Tab>: written without loading rich (a tenth of a second).
            from cortex.cli.completion import text_of

            stdout.write(text_of(envelope.data))
            return
        if envelope.ok and envelope.command == "case.report":
            # The document byte for byte (or where it went), without loading rich.
            from cortex.report.command import text_of as report_text

            stdout.write(report_text(envelope.data))
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
