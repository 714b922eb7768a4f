"""The CLI's one call: parsed values into a use case's input, and the few face hooks.

A command the kernel registers (`cortex.kernel.inputs.REGISTRY`) runs through `run_use_case`:
its parsed values fill the use case's input struct through the alias table (`--surface` is
`surfaces`, the positional task is `task_id`), and the lease token the command line did not give
comes from $CORTEX_LEASE_TOKEN. What only this face does stays in a hook here: a file `handoff
-o` writes, the question a person confirms at the terminal (`CONFIRMS`), and `completion`, the
CLI's own command. Every use case is imported lazily, so a call loads only the modules it needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from cortex.cli.parser import UsageError
from cortex.kernel.envelope import Result
from cortex.kernel.kernel import Kernel

if TYPE_CHECKING:
    from cortex.kernel.human.decisions import Confirmation

Values = dict[str, Any]


class Call:
    """What a handler gets: the kernel, the parsed values, and the process's edges."""

    def __init__(
        self,
        kernel: Kernel,
        values: Values,
        *,
        command: str = "",
        cwd: str,
        stdin: IO[bytes],
        env: Mapping[str, str],
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
    ) -> None:
        self.kernel = kernel
        self.values = values
        self.command = command
        self.cwd = cwd
        self.stdin = stdin
        self.env = env
        # Only the studio looks at these: it must know whether a person is at a terminal.
        self.stdout = stdout
        self.stderr = stderr

    def __getitem__(self, key: str) -> Any:
        return self.values[key]


def run_use_case(c: Call) -> Result:
    """Run the registered use case of `c.command` on the input its parsed values make.

    The struct is built without checking its values again: the grammar checked what it owns
    (integers, required options), and the use case checks the rest with the CLI's names.
    """
    from cortex.kernel.inputs import ALIASES, use_case

    struct, function = use_case(c.command)
    values: Values = {}
    for name in struct.__struct_fields__:
        dest = ALIASES.get(name, name)
        if dest in c.values:
            values[name] = c.values[dest]
    if "lease_token" in struct.__struct_fields__:
        values["lease_token"] = _lease_token(c)
    asks = CONFIRMS.get(c.command)
    extra = {} if asks is None else {"confirm": asks(c)}
    result: Result = function(c.kernel, struct(**values), **extra)
    return result


def handler(command: str) -> Callable[[Call], Result]:
    """What runs `command`: its face hook or handler, else the registered use case."""
    return HANDLERS.get(command, run_use_case)


def _lease_token(c: Call) -> str | None:
    """The lease token: `--lease-token`, else $CORTEX_LEASE_TOKEN (docs/design/trust.md)."""
    given: str | None = c.values.get("lease_token")
    return given if given is not None else (c.env.get("CORTEX_LEASE_TOKEN") or None)


def _confirm_answer(asked: Confirmation) -> str | None:
    """Show the question and the choice at the controlling terminal; what the person typed."""
    from cortex.cli.terminal import ask, indented

    lines = [
        f"Decision {asked.decision_id} of {asked.task_id} asks:",
        *indented(asked.question),
        f"Answering as {asked.responder}: {asked.option}",
        *indented(asked.label),
    ]
    if asked.consequence:
        lines += ["Its consequence:", *indented(asked.consequence)]
    return ask(lines, f"Type {asked.option} to answer, anything else to cancel: ")


def _confirm_at_terminal(
    name: str, env: Mapping[str, str]
) -> Callable[[str, Sequence[str]], bool] | None:
    """Ask at the controlling terminal, never at stdin: piped input cannot approve a command."""

    def confirm(workspace: str, argv: Sequence[str]) -> bool:
        import json

        from cortex.cli.terminal import ask
        from cortex.kernel.host.programs import resolve

        # The argv as a JSON list of ASCII strings: one line, every argument visible, no
        # newline, escape or bidi override in a repository's config can redraw the prompt.
        shown = json.dumps(list(argv), ensure_ascii=True)
        # Which program that is, as the run will find it: `python` may be any Python.
        found = resolve(argv[0], workspace, env) if argv else None
        program = json.dumps(found, ensure_ascii=True) if found else "not found on PATH"
        lines = [
            f"Approve the verifier {name!r} for {workspace}?",
            f"  it runs: {shown}",
            f"  program: {program}",
        ]
        return ask(lines, f"Type {name} to approve, anything else to cancel: ") == name

    return confirm


def _handoff(c: Call) -> Result:
    """The packet, and with `-o` the file this face writes where the caller stands."""
    from cortex.kernel.views.handoff.file import save

    if c["format"] is not None and c["output"] is None:
        raise UsageError("cortex case handoff: --format says what -o writes; give -o FILE too")
    result = run_use_case(c)
    if c["output"] is not None:
        path = os.path.join(c.cwd, c["output"])
        result.data["written"] = save(c.kernel, result, path, fmt=c["format"] or "markdown")
    return result


def _completion(c: Call) -> Result:
    from cortex.cli.completion import SCRIPTS, check_shell, complete

    shell = check_shell(c["shell"])
    if c["line"] is None:
        return Result(data={"shell": shell, "script": SCRIPTS[shell]})
    found = complete(c.kernel, c["line"])
    return Result(
        data={
            "shell": shell,
            "candidates": [{"value": value, "description": about} for value, about in found],
        }
    )


def _confirm_resolution() -> Callable[[str, str, Sequence[str]], bool]:
    """Ask at the controlling terminal, like `case trust`: piped input cannot resolve a contest."""

    def confirm(decision: str, outcome: str, contests: Sequence[str]) -> bool:
        try:
            tty = open("/dev/tty", "r+b", buffering=0)  # noqa: SIM115
        except OSError:
            return False
        with tty:
            from cortex.screen.text import safe

            prompt = safe(
                f"Resolve the contest of {decision} as {outcome}?\n"
                f"  it closes: {', '.join(contests)}\n"
                f"Type {decision} to confirm, anything else to cancel: "
            )
            tty.write(prompt.encode("utf-8", "backslashreplace"))
            answer = tty.readline(4096).decode("utf-8", "replace").strip()
        return answer == decision

    return confirm


HANDLERS: dict[str, Callable[[Call], Result]] = {
    "case.handoff": _handoff,
    "completion": _completion,
}


def _answer_confirm(c: Call) -> Any:
    # Only a person at this command's terminal is asked (the channel, cortex.cli.terminal).
    return _confirm_answer if c.kernel.via == "cli-tty" else None


def _remove_confirm(c: Call) -> Any:
    from cortex.cli.retention import confirm_remove

    return confirm_remove if c.kernel.via == "cli-tty" else None


def _forget_confirm(c: Call) -> Any:
    from cortex.cli.retention import confirm_forget

    return confirm_forget if c.kernel.via == "cli-tty" else None


CONFIRMS: dict[str, Callable[[Call], Any]] = {
    "case.decision.answer": _answer_confirm,
    "case.trust": lambda c: _confirm_at_terminal(c["name"], c.env),
    "case.decision.resolve": lambda _c: _confirm_resolution(),
    "case.rm": _remove_confirm,
    "case.forget": _forget_confirm,
}
"""The face's question to a person, for the use cases only a person may settle (or None)."""
