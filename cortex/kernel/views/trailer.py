"""The use case `case trailer`: the `Cortex-Case:` trailers a commit names its cases with.

Read-only: the cases of this workspace whose change lease is active (docs/design/sharing.md).
"""

from __future__ import annotations

from cortex.cases.errors import NotFoundError
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Actor, Input
from cortex.kernel.kernel import Kernel


def trailer(kernel: Kernel, *, actor: str | None = None) -> Result:
    """The `Cortex-Case:` trailers for the cases of this workspace whose lease is active."""
    from cortex.cases.errors import CortexError
    from cortex.kernel.lease import state

    who = kernel.acting(actor)
    now = kernel.clock()
    found = []
    for case_id in kernel.store.list_ids():
        try:
            case = kernel.store.read_case(case_id)
        except CortexError:
            continue
        lease = case.change_lease
        if lease is None or state(lease, now) != "active":
            continue
        if who is not None and lease.actor != who:
            continue
        found.append(case_id)
    if not found:
        held = f" held by {who}" if who else ""
        raise NotFoundError(f"no case of this workspace has an active change lease{held}")
    return Result(data={"taskIds": found, "trailers": [f"Cortex-Case: {i}" for i in found]})


class Trailer(Input):
    """The input of `case trailer`."""

    actor: Actor = None


def trailers(kernel: Kernel, given: Trailer) -> Result:
    """`trailer` for one input."""
    return trailer(kernel, actor=given.actor)
