"""Where Cortex keeps its state on this machine, from an environment the caller passes in.

`CORTEX_STATE_DIR`, else `$XDG_STATE_HOME/cortex`, else `~/.local/state/cortex`; relative
values are ignored, as XDG prescribes. Standard library only: the cheapest hook needs it too.
`cortex.kernel.config.state_root` refuses what this cannot name, with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def state_dir(env: Mapping[str, str]) -> str | None:
    """The state root `env` names, or None (a relative CORTEX_STATE_DIR, or no usable HOME)."""
    explicit = env.get("CORTEX_STATE_DIR")
    if explicit:
        return os.path.normpath(explicit) if os.path.isabs(explicit) else None
    for variable, tail in (
        ("XDG_STATE_HOME", ("cortex",)),
        ("HOME", (".local", "state", "cortex")),
    ):
        base = env.get(variable)
        if base and os.path.isabs(base):
            return os.path.join(base, *tail)
    return None
