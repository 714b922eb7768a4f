"""`command:NAME`: run a configured command; exit 0 passes, anything else fails.

The argv comes only from configuration, and only an approved command runs
(docs/design/verification.md §2). A timeout or a spawn error is `blocked`: the code was not
shown to fail, the check just did not happen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cortex.verifiers import runner
from cortex.verifiers.base import Context, EvidenceKind, Outcome, split

_RUN_KINDS: tuple[EvidenceKind, ...] = ("unit_test", "build", "lint", "terminal_run")


class CommandVerifier:
    """The `command` kind."""

    kind = "command"
    version = "1"

    def check(self, requirement: str, context: Context) -> str | None:
        """The name must be configured."""
        _, name = split(requirement)
        if not name:
            return "a command verifier is named command:NAME"
        if name not in context.verifiers:
            return (
                f"no verifier {name!r} is configured: add [verifiers.{name}] with an argv to "
                "cortex.toml or [tool.cortex] in pyproject.toml"
            )
        return None

    def run(self, requirement: str, context: Context) -> Outcome:
        """Run the configured argv if approved."""
        _, name = split(requirement)
        assert name is not None  # noqa: S101 - check() ran first
        config = context.verifiers[name]
        return run_configured(name, config.argv, context, timeout=config.timeout, kind=config.kind)


def run_configured(
    name: str,
    argv: Sequence[str],
    context: Context,
    *,
    timeout: float,
    kind: str,
    extra_argv: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    stdout: list[bytes] | None = None,
) -> Outcome:
    """Shared by `command` and `pytest`: approval, then one bounded run.

    `stdout`, if given, receives what is kept of the run's standard output (pytest reads its
    summary line there).
    """
    shown = " ".join(argv)
    # The configured kind, as the word it matched; any other kind records a plain terminal run.
    evidence_kind: EvidenceKind = next((k for k in _RUN_KINDS if k == kind), "terminal_run")
    if not context.approve(name, argv):
        return Outcome(
            status="blocked",
            summary=f"{name}: not run, the command is not approved on this machine",
            notes=[
                (
                    f"approve it for this workspace with `cortex case trust {name}` (asks at a "
                    "terminal), or launch cortex with CORTEX_APPROVE_COMMANDS=1"
                )
            ],
            evidence_kind="terminal_run",
        )
    env = dict(context.env)
    if extra_env:
        env.update(extra_env)
    full = (*argv, *extra_argv)
    result = runner.run(full, cwd=context.root, env=env, timeout=timeout, watch=context.watch)
    raw = result.transcript(full)
    if stdout is not None:
        stdout.append(result.stdout)
    if result.spawn_error is not None:
        return Outcome(
            status="blocked",
            summary=f"{name}: could not start `{shown}`",
            notes=[result.spawn_error],
            raw=raw,
            evidence_kind=evidence_kind,
        )
    if result.timed_out:
        return Outcome(
            status="blocked",
            summary=f"{name}: `{shown}` was killed after {timeout:g} s",
            notes=[f"timed out after {timeout:g} s; raise [verifiers.{name}].timeout if needed"],
            raw=raw,
            evidence_kind=evidence_kind,
        )
    passed = result.exit_code == 0
    return Outcome(
        status="passed" if passed else "failed",
        summary=f"{name}: `{shown}` exited {result.exit_code} in {result.seconds:.2f} s",
        raw=raw,
        evidence_kind=evidence_kind,
        details={"exitCode": int(result.exit_code or 0)},
    )
