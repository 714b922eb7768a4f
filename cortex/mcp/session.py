"""One MCP connection's state, and the one call every tool makes through it.

A server is one stdio connection. The lease tokens its own `cortex_begin_change` calls were given
stay here, in memory only, and are presented on its lease-bound calls; nothing else reaches them,
so two servers started with the same actor name are two holders (docs/design/trust.md, "Lease
tokens"). `call` turns a tool's decoded arguments into its use case's input (with the token this
connection holds), runs the use case, and keeps or forgets the token its answer says changed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from cortex.kernel.errors import CortexError
from cortex.kernel.inputs import use_case

if TYPE_CHECKING:
    from cortex.kernel.envelope import Result
    from cortex.kernel.kernel import Kernel


class Leases:
    """The lease tokens this server was given, by task id, for as long as it runs.

    Calls run in worker threads, hence the lock.
    """

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, kernel: Kernel, ref: str) -> str | None:
        """The token this server holds for the lease of the case `ref` names, if any.

        Tokens are kept by whole task id; a prefix or `@latest` is made whole the way the call
        itself will make it (a reference that names nothing gets no token, and the call then
        says why).
        """
        with self._lock:
            if ref in self._tokens or not self._tokens:
                return self._tokens.get(ref)
        try:
            task_id, _ = kernel.find(ref)
        except CortexError:
            return None
        with self._lock:
            return self._tokens.get(task_id)

    def keep(self, task_id: str, token: str) -> None:
        """Hold the token a `begin_change` of this server was given."""
        with self._lock:
            self._tokens[task_id] = token

    def forget(self, task_id: str) -> None:
        """Drop the token of a lease that ended."""
        with self._lock:
            self._tokens.pop(task_id, None)


def call(kernel: Kernel, command: str, arguments: Any, held: Leases) -> Result:
    """Run `command`'s use case on a tool's decoded `arguments`, with the token held for it."""
    struct, function = use_case(command)
    names = struct.__struct_fields__
    values = {name: getattr(arguments, name) for name in arguments.__struct_fields__}
    values.pop("workspace", None)  # the server built the kernel there already
    if "lease_token" in names:
        values["lease_token"] = held.get(kernel, values["task_id"])
    # Decoding checked every value already: the input is built as it is, not checked again.
    result: Result = function(kernel, struct(**values))
    if command == "case.begin-change":
        # The token stays with this server (for its connection), never with the client.
        token = result.data.get("leaseToken")
        if token:
            held.keep(result.data["taskId"], token)
        result.data["leaseToken"] = None
    elif command == "case.complete":
        held.forget(result.data["taskId"])  # completing ended the lease
    return result
