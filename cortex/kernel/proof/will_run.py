"""What a command verifier will run here, and whether it may: one answer for every surface.

`config`, `doctor` and the plan's answer all say it the same way (issue 29): before, an
unconfigured `pytest` ran whatever Python came first while `config` and `doctor` said there
was no verifier, and an unapproved command showed up only as a blocked receipt. Nothing here
runs anything: the program is found as the run will find it (`cortex.verifiers.programs`).
"""

from __future__ import annotations

import msgspec

from cortex.cases.errors import CortexError
from cortex.kernel.kernel import Kernel
from cortex.kernel.proof import grants
from cortex.verifiers.base import split
from cortex.verifiers.programs import diagnose, project_python

_COMMAND_KINDS = frozenset({"command", "pytest"})


class WillRun(msgspec.Struct, kw_only=True, rename="camel"):
    """One command verifier as it would run now."""

    requirement: str
    """As a plan names it: `pytest`, `pytest:NAME`, `command:NAME`."""
    name: str
    """Its `[verifiers.NAME]` table, and the name `cortex case trust` takes."""
    argv: list[str]
    configured: bool
    """False for `pytest` without a `[verifiers.pytest]`: the project's interpreter, found now."""
    source: str
    """The file that configures it, or how the default was found."""
    program: str | None
    """The executable argv[0] names here (None: not found)."""
    problem: str | None
    """Why it cannot run here (not found, a link to nothing, a `#!` naming nothing)."""
    approved: bool
    approval: str
    """Who approved it, or what approves it."""
    approve: str | None
    """The command a person runs at a terminal to approve it (None when approved)."""


def will_run(kernel: Kernel, requirement: str) -> WillRun | None:
    """`requirement` as it would run here (None if it runs no command).

    None for `scope` and plugins, and for a `command:NAME` that is not configured (the plan's
    verify refuses it by name).
    """
    kind, name = split(requirement)
    if kind not in _COMMAND_KINDS:
        return None
    key = name or "pytest"
    config = kernel.config.verifiers.get(key)
    root = kernel.workspace.root
    if config is not None:
        argv = list(config.argv)
        source = config.source or "configuration"
    elif kind == "pytest" and name is None:
        python, found_as = project_python(root, kernel.env)
        argv = [python, "-m", "pytest"]
        source = f"the project's interpreter ({found_as}), found at run time"
    else:
        return None
    program, problem = diagnose(argv[0], root, kernel.env)
    approved, approval = _approval(kernel, key, argv)
    return WillRun(
        requirement=requirement,
        name=key,
        argv=argv,
        configured=config is not None,
        source=source,
        program=program,
        problem=problem,
        approved=approved,
        approval=approval,
        approve=None if approved else f"cortex case trust {key}",
    )


def _approval(kernel: Kernel, name: str, argv: list[str]) -> tuple[bool, str]:
    if grants.env_approves(kernel.env):
        return True, f"approved by {grants.APPROVE_VARIABLE}"
    try:
        granted = grants.load(kernel.env)
    except CortexError as exc:
        return False, f"not approved: the grants file cannot be read ({exc.message})"
    if grants.granted(granted, kernel.workspace.root, name, argv):
        return True, "approved by a grant for this exact argv"
    return False, f"not approved: run `cortex case trust {name}` at a terminal"


def warnings_for(runs: list[WillRun]) -> list[str]:
    """What a person must know before verify.

    What an unconfigured pytest runs, what cannot start, what is not approved (and the command
    that approves it).
    """
    found: list[str] = []
    for run in runs:
        shown = " ".join(run.argv)
        if not run.configured:
            found.append(
                f"{run.requirement} is not configured: verify will run `{shown}`, {run.source}; "
                "`cortex init` writes it to cortex.toml"
            )
        if run.problem is not None:
            found.append(f"{run.requirement} runs {run.problem}: verify would be blocked")
        if not run.approved:
            found.append(
                f"{run.requirement} is not approved on this machine, so verify would be blocked: "
                f"a person runs `{run.approve}` at a terminal (or launch cortex with "
                f"{grants.APPROVE_VARIABLE}=1)"
            )
    return found
