"""`cortex config`: the configuration in force here, and where each value came from.

Redaction literals are secrets by definition: only how many there are, and from where, is shown.
Each command verifier also says what it runs here, whether it may, and why
(docs/design/verification.md); so does the `pytest` a plan may name without configuring it,
when the repository shows signs of pytest.
"""

from __future__ import annotations

from cortex.cases.bounds import VERIFIER_TIMEOUT_DEFAULT
from cortex.kernel.config import ENV_KEYS, global_config_path
from cortex.kernel.envelope import Result
from cortex.kernel.host.init import detect
from cortex.kernel.inputs import Nothing
from cortex.kernel.kernel import Kernel
from cortex.kernel.proof import grants
from cortex.kernel.proof.will_run import will_run


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

    verifiers = {}
    runs = [will_run(kernel, f"command:{name}") for name in sorted(config.verifiers)]
    if "pytest" not in config.verifiers and "pytest" in detect(kernel.workspace.root):
        # What `--verify pytest` runs without a [verifiers.pytest] (issue 29: it ran unseen).
        runs.append(will_run(kernel, "pytest"))
    for run in runs:
        assert run is not None  # noqa: S101 - configured, or the pytest default
        table = config.verifiers.get(run.name)
        verifiers[run.name] = {
            "argv": run.argv,
            "timeout": table.timeout if table else VERIFIER_TIMEOUT_DEFAULT,
            "kind": table.kind if table else "unit_test",
            "source": run.source,
            "configured": run.configured,
            "program": run.program,
            "problem": run.problem,
            "approval": run.approval,
            "approve": run.approve,
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


def show(kernel: Kernel, _given: Nothing) -> Result:
    """`show_config` for the empty input."""
    return show_config(kernel)
