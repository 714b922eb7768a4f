"""`cortex config`: the configuration in force here, and where each value came from.

Redaction literals are secrets by definition: only how many there are, and from where, is shown.
Each command verifier also says whether it may run here, and why (docs/design/verification.md).
"""

from __future__ import annotations

from cortex.kernel import grants
from cortex.kernel.config import ENV_KEYS, global_config_path
from cortex.kernel.envelope import Result
from cortex.kernel.kernel import Kernel


def show_config(kernel: Kernel) -> Result:
    """The resolved configuration of the current workspace."""
    config = kernel.config
    sources = config.sources

    def entry(key: str, value: object) -> dict[str, object]:
        return {
            "value": value,
            "default": key not in sources,
            "sources": sources.get(key, []),
            "environment": ENV_KEYS.get(key),
        }

    approve_all = grants.env_approves(kernel.env)
    granted = None if approve_all else grants.load(kernel.env)
    verifiers = {}
    for name, verifier in sorted(config.verifiers.items()):
        if approve_all:
            approval = f"approved by {grants.APPROVE_VARIABLE}"
        elif granted is not None and grants.granted(
            granted, kernel.workspace.root, name, verifier.argv
        ):
            approval = "approved by a grant for this exact argv"
        else:
            approval = f"not approved: run `cortex case trust {name}` at a terminal"
        verifiers[name] = {
            "argv": list(verifier.argv),
            "timeout": verifier.timeout,
            "kind": verifier.kind,
            "source": verifier.source,
            "approval": approval,
        }
    return Result(
        data={
            "workspace": {"root": kernel.workspace.root, "kind": kernel.workspace.kind},
            "store": kernel.store_info,
            "stateRoot": kernel.state_root,
            "files": config.files,
            "globalFile": global_config_path(kernel.env),
            "grantsFile": grants.grants_path(kernel.env),
            "values": {
                "cases_dir": entry("cases_dir", config.cases_dir),
                "lock_timeout": entry("lock_timeout", config.lock_timeout),
                "redact_literals": entry(
                    "redact_literals", f"{len(config.redact_literals)} literal(s), not shown"
                ),
                "recall_brief": entry("recall_brief", config.recall_brief),
                "share": entry(
                    "share", {"enabled": config.share.enabled, "remote": config.share.remote}
                ),
                "hooks": entry(
                    "hooks",
                    {"stop_gate": config.hooks.stop_gate, "capture": config.hooks.capture},
                ),
                "prune_older_than": entry("prune_older_than", config.prune_older_than),
            },
            "verifiers": verifiers,
        }
    )
