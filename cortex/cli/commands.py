"""The CLI's one call: parsed values into a use case's input, and the few face hooks.

A command the kernel registers (`cortex.kernel.inputs.REGISTRY`) runs through `run_use_case`:
its parsed values fill the use case's input struct through the alias table (`--surface` is
`surfaces`, the positional task is `task_id`), and the lease token the command line did not give
comes from $CORTEX_LEASE_TOKEN. What only this face does stays in a hook here (a file `handoff
-o` writes); the commands not yet registered keep a handler each. Every use case is imported
lazily, so a call loads only the modules it needs.
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


def _show(c: Call) -> Result:
    from cortex.kernel.views.show import show

    return show(c.kernel, c["task"])


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
    result: Result = function(c.kernel, struct(**values))
    return result


def handler(command: str) -> Callable[[Call], Result]:
    """What runs `command`: its face hook or handler, else the registered use case."""
    return HANDLERS.get(command, run_use_case)


def _lease_token(c: Call) -> str | None:
    """The lease token: `--lease-token`, else $CORTEX_LEASE_TOKEN (docs/design/trust.md)."""
    given: str | None = c.values.get("lease_token")
    return given if given is not None else (c.env.get("CORTEX_LEASE_TOKEN") or None)


def _lease_renew(c: Call) -> Result:
    from cortex.kernel.lease import renew

    return renew(c.kernel, c["task"], actor=c["actor"], ttl=c["ttl"], lease_token=_lease_token(c))


def _lease_release(c: Call) -> Result:
    from cortex.kernel.lease import release

    return release(c.kernel, c["task"], actor=c["actor"], lease_token=_lease_token(c))


def _decision_answer(c: Call) -> Result:
    from cortex.kernel.human.decisions import answer

    # Only a person at this command's terminal is asked (the channel, cortex.cli.terminal).
    confirm = _confirm_answer if c.kernel.via == "cli-tty" else None
    return answer(
        c.kernel,
        c["task"],
        c["decision"],
        option=c["answer"],
        responder=c["responder"],
        confirm=confirm,
    )


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


def _decision_list(c: Call) -> Result:
    from cortex.kernel.human.decisions import list_decisions

    return list_decisions(c.kernel, c["task"])


def _audit(c: Call) -> Result:
    from cortex.kernel.views.audit import audit

    return Result(data=audit(c.kernel, c["task"]))


def _attest(c: Call) -> Result:
    from cortex.kernel.views.attest import attest

    return attest(c.kernel, c["task"])


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


def _trust(c: Call) -> Result:
    from cortex.kernel.host.trust import trust

    confirm = _confirm_at_terminal(c["name"], c.env)
    return trust(c.kernel, c["name"], confirm=confirm, revoke=c["revoke"])


def _config(c: Call) -> Result:
    from cortex.kernel.host.show_config import show_config

    return show_config(c.kernel)


def _init(c: Call) -> Result:
    from cortex.kernel.host.init import init

    return init(c.kernel, force=c["force"], pyproject=c["pyproject"])


def _setup(host: str) -> Callable[[Call], Result]:
    def handler(c: Call) -> Result:
        if c.values.get("plugin") is not None:
            from cortex.kernel.host.plugin import write_plugin

            directory = os.path.join(c.cwd, str(c["plugin"]))
            return write_plugin(directory, dry_run=c["dry_run"], scope=c["scope"],
                                remove=c["remove"])  # fmt: skip
        from cortex.kernel.host.setup import setup

        return setup(c.kernel, host, scope=c["scope"], dry_run=c["dry_run"], remove=c["remove"])

    return handler


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


def _metrics(c: Call) -> Result:
    from cortex.kernel.views.metrics import metrics

    return metrics(c.kernel, c["task"])


def _sessions(c: Call) -> Result:
    from cortex.kernel.views.sessions import sessions

    return sessions(
        c.kernel,
        repo=c["repo"],
        active=c["active"],
        stale_after=c["stale_after"],
        query=c["query"],
        limit=c["limit"],
        archived=c["archived"],
    )


def _overview(c: Call) -> Result:
    from cortex.kernel.views.sessions import overview

    return overview(c.kernel)


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


def _recall_reindex(c: Call) -> Result:
    from cortex.kernel.recall import reindex

    return reindex(c.kernel)


def _recall_rebuild(c: Call) -> Result:
    from cortex.kernel.recall import rebuild

    return rebuild(c.kernel, verify=c["verify"])


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


def _decision_resolve(c: Call) -> Result:
    from cortex.kernel.human.contests import resolve_contest

    return resolve_contest(
        c.kernel,
        c["task"],
        c["decision"],
        outcome=c["outcome"],
        reason=c["reason"],
        responder=c["responder"],
        confirm=_confirm_resolution(),
    )


def _prune(c: Call) -> Result:
    from cortex.kernel.retention.archive import prune

    return prune(c.kernel, older_than=c["older_than"], apply=c["apply"], actor=c["actor"])


def _rm(c: Call) -> Result:
    from cortex.cli.retention import confirm_remove
    from cortex.kernel.retention.archive import remove

    confirm = confirm_remove if c.kernel.via == "cli-tty" else None
    return remove(c.kernel, c["task"], force=c["force"], confirm=confirm)


def _adopt(c: Call) -> Result:
    from cortex.kernel.host.adopt import adopt

    return adopt(c.kernel, c["store"], dry_run=c["dry_run"])


def _recall_drop(c: Call) -> Result:
    from cortex.kernel.host.storage import drop

    return drop(c.kernel, dry_run=c["dry_run"])


def _forget(c: Call) -> Result:
    from cortex.cli.retention import confirm_forget
    from cortex.kernel.retention.forget import forget

    confirm = confirm_forget if c.kernel.via == "cli-tty" else None
    return forget(
        c.kernel, c["task"], c["id"], reason=c["reason"], confirm=confirm, actor=c["actor"]
    )


def _share(c: Call) -> Result:
    from cortex.kernel.share import share

    return share(c.kernel, c["task"], all_cases=c["all"], remote=c["remote"], dry_run=c["dry_run"])


def _fetch(c: Call) -> Result:
    from cortex.kernel.share import fetch

    return fetch(
        c.kernel,
        c["task"],
        pr=c["pr"],
        bundle_file=c["bundle"],
        all_cases=c["all"],
        remote=c["remote"],
        base=c["base"],
        cwd=c.cwd,
    )


def _bundle(c: Call) -> Result:
    from cortex.kernel.share import bundle

    return bundle(c.kernel, c["task"], output=os.path.join(c.cwd, c["output"]))


def _trailer(c: Call) -> Result:
    from cortex.kernel.share import trailer

    return trailer(c.kernel, actor=c["actor"])


def _git_trailer(c: Call) -> Result:
    from cortex.kernel.host.trailer_hook import install

    return install(c.kernel, dry_run=c["dry_run"])


HANDLERS: dict[str, Callable[[Call], Result]] = {
    "case.handoff": _handoff,
    "case.show": _show,
    "case.lease.renew": _lease_renew,
    "case.lease.release": _lease_release,
    "case.decision.answer": _decision_answer,
    "case.decision.list": _decision_list,
    "case.audit": _audit,
    "case.attest": _attest,
    "case.trust": _trust,
    "config": _config,
    "init": _init,
    "setup.claude": _setup("claude"),
    "setup.codex": _setup("codex"),
    "case.metrics": _metrics,
    "case.sessions": _sessions,
    "case.overview": _overview,
    "completion": _completion,
    "recall.reindex": _recall_reindex,
    "recall.rebuild": _recall_rebuild,
    "case.decision.resolve": _decision_resolve,
    "case.share": _share,
    "case.fetch": _fetch,
    "case.bundle": _bundle,
    "case.trailer": _trailer,
    "setup.git-trailer": _git_trailer,
    "case.forget": _forget,
    "case.prune": _prune,
    "case.rm": _rm,
    "adopt": _adopt,
    "recall.drop": _recall_drop,
}
