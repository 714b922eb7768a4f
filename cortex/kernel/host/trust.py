"""`cortex case trust NAME`: a person approves one configured command for this workspace.

The confirmation comes from the surface (the CLI asks at the controlling terminal); the kernel
only records a grant for exactly the argv that was shown (docs/design/verification.md §2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cortex.cases.errors import InvalidInputError
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel
from cortex.kernel.proof import grants
from cortex.verifiers.pytest_junit import default_argv


def command_for(kernel: Kernel, name: str) -> Sequence[str]:
    """The argv configured for `name` (the pytest default when `pytest` is not configured)."""
    config = kernel.config.verifiers.get(name)
    if config is not None:
        return config.argv
    if name == "pytest":
        return default_argv(kernel.workspace.root, kernel.env)
    configured = ", ".join(sorted(kernel.config.verifiers)) or "none"
    msg = f"no verifier {name!r} is configured (configured: {configured})"
    raise InvalidInputError(msg)


def trust(
    kernel: Kernel,
    name: str,
    *,
    confirm: Callable[[str, Sequence[str]], bool] | None,
    revoke: bool = False,
) -> Result:
    """Grant (or revoke) approval of verifier `name` for this workspace."""
    workspace = kernel.workspace.root
    if revoke:
        path, changed = grants.revoke(kernel.env, workspace, name)
        return Result(data={"name": name, "workspace": workspace, "file": path, "changed": changed})
    argv = command_for(kernel, name)
    if confirm is None or not confirm(workspace, argv):
        msg = (
            "approving a command needs a person at an interactive terminal who types its name; "
            "nothing was granted (launchers can set CORTEX_APPROVE_COMMANDS=1 instead)"
        )
        raise GateRefusedError(msg, [])
    path, changed = grants.save_grant(kernel.env, workspace, name, argv, kernel.now())
    return Result(
        data={
            "name": name,
            "workspace": workspace,
            "argv": list(argv),
            "argvSha256": grants.argv_digest(argv),
            "file": path,
            "changed": changed,
        }
    )


class Trust(Input):
    """The input of `case trust` (approving a command happens at a terminal: the face asks)."""

    name: str
    revoke: bool = False


def trust_verifier(
    kernel: Kernel, given: Trust, *, confirm: Callable[[str, Sequence[str]], bool] | None
) -> Result:
    """`trust` for one input; `confirm` is the face's question to the person, if any."""
    return trust(kernel, given.name, confirm=confirm, revoke=given.revoke)
