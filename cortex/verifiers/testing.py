"""Helpers for testing a verifier without a case store, a git repository or a kernel.

A verifier only ever sees a `Context` and returns an `Outcome`, so it can be tested with
plain values. This module builds those values the way the kernel would and runs a verifier the
way `cortex case verify` does, for plugin authors' own test suites (docs/plugins.md)::

    from cortex.verifiers import testing

    def test_a_clean_file_passes(tmp_path):
        (tmp_path / "app.py").write_text("print('hi')")
        context = testing.make_context(tmp_path, changed=["app.py"])
        outcome = testing.run(MyVerifier(), "mine", context)
        assert outcome.status == "passed"

It is a supported interface: names here keep their meaning across releases. Like the
verifiers, it depends only on the storage records, the workspace capture and the verifier
protocol, never on the kernel; and nothing on the command path imports it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from cortex.cases.digest import sha256_hex
from cortex.cases.records import CaseFile, ChangeBoundary, Criterion, Mode, Phase, Risk, Workspace
from cortex.verifiers.base import Context, Outcome, Verifier, validated
from cortex.verifiers.config import VerifierConfig
from cortex.workspace.capture import Capture

__all__ = [
    "FAKE_HEAD",
    "FAKE_TASK_ID",
    "CheckRefusedError",
    "fake_capture",
    "make_case",
    "make_context",
    "run",
]

FAKE_HEAD = "0" * 40
"""The HEAD of a fake capture unless one is given."""
FAKE_TASK_ID = "task_" + "0" * 26
"""The id of a case built by `make_case` (well formed, so code that parses ids accepts it)."""
_FAKE_TIME = "2000-01-01T00:00:00.000Z"
_UNKNOWN = "git could not list the changed files"


class CheckRefusedError(Exception):
    """`run` was asked to run a requirement its verifier's `check()` refuses.

    The kernel refuses the whole `cortex case verify` call then (exit 4, nothing written);
    `reason` is the text it would show.
    """

    def __init__(self, requirement: str, reason: str) -> None:
        super().__init__(f"{requirement}: {reason}")
        self.requirement = requirement
        self.reason = reason


class _Unset:
    """Marks an argument that was not given (None means something for `changed`)."""


_UNSET = _Unset()


def fake_capture(
    changed: Iterable[str] = (),
    *,
    head: str = FAKE_HEAD,
    branch: str | None = "main",
    digest: str | None = None,
    reason: str | None = None,
    warning: str | None = None,
) -> Capture:
    """A workspace capture as git would have given it, without running git.

    `changed` are the paths that differ from HEAD (relative, `/`-separated). The digest
    defaults to one derived from them, so two fake captures of the same changes are the same
    state. With `reason`, the capture is unbound: no HEAD and no digest, as when the workspace
    is not a git repository or git failed; `reason` says why.
    """
    paths = _paths(changed)
    if reason is not None:
        return Capture(reason=reason, changed=paths, warning=warning)
    if digest is None:
        listed = "\0".join([head, *paths]).encode("utf-8", "surrogateescape")
        digest = "sha256:" + sha256_hex(listed)
    return Capture(head=head, branch=branch, digest=digest, changed=paths, warning=warning)


def make_case(
    root: str | os.PathLike[str] = ".",
    *,
    goal: str = "a task under test",
    mode: Mode = "change",
    status: Phase | None = None,
    risk: Risk = "medium",
    boundary: Iterable[str] = (),
    requirements: Iterable[str] = (),
    criteria: Mapping[str, str] | None = None,
    actor: str = "agent-test",
    commit_before: str | None = FAKE_HEAD,
) -> CaseFile:
    """A case file as the kernel passes it to a verifier: planned, in the workspace `root`.

    `boundary` is the plan's change boundary (a file, or a directory ending in `/`),
    `requirements` its verifier names, `criteria` its acceptance criteria (id -> statement).
    `status` defaults to where a first `verify` finds the case: `changing` for a change task,
    `planned` for the others.
    """
    where = os.path.abspath(os.fspath(root))
    return CaseFile(
        revision=1,
        id=FAKE_TASK_ID,
        created_at=_FAKE_TIME,
        updated_at=_FAKE_TIME,
        goal=goal,
        mode=mode,
        status=status or ("changing" if mode == "change" else "planned"),
        actor=actor,
        risk=risk,
        workspace=Workspace(
            kind="git",
            root=where,
            repository=os.path.basename(where),
            branch="main",
            commit_before=commit_before,
        ),
        change_boundary=ChangeBoundary(files=list(boundary)),
        verification_required=list(requirements),
        acceptance_criteria=[
            Criterion(id=key, statement=text) for key, text in (criteria or {}).items()
        ],
    )


def make_context(
    root: str | os.PathLike[str] = ".",
    *,
    changed: Iterable[str] | _Unset | None = _UNSET,
    env: Mapping[str, str] | None = None,
    verifiers: Mapping[str, VerifierConfig | Sequence[str]] | None = None,
    approve: bool | Callable[[str, Sequence[str]], bool] = False,
    case: CaseFile | None = None,
    start: Capture | None = None,
    ack_drift: bool = False,
) -> Context:
    """A verifier's `Context` for the workspace at `root`, with everything else faked.

    - `changed`: the files the task changed (relative, `/`-separated). None means git cannot
      say, as the kernel reports for a workspace it cannot capture; then `start` defaults to an
      unbound capture. Not given: the changes `start` lists (none for the default capture).
    - `env`: the environment cortex was launched with. Empty by default, so a test never
      depends on the developer's shell; pass `os.environ` to run commands with it.
    - `verifiers`: the `[verifiers.NAME]` tables, as `VerifierConfig` or just an argv.
    - `approve`: whether a configured command may run. False by default, as on a machine
      that granted nothing; True approves everything (CORTEX_APPROVE_COMMANDS=1); a callable
      `(name, argv) -> bool` decides per command.
    - `case`: defaults to `make_case(root)`; `start`, the capture taken before any verifier
      ran, to `fake_capture(changed)`.
    """
    where = os.path.abspath(os.fspath(root))
    if isinstance(changed, _Unset):
        start = start or fake_capture()
        files = list(start.changed) if start.bound else None
    elif changed is None:
        start = start or fake_capture(reason=_UNKNOWN)
        files = None
    else:
        files = _paths(changed)
        start = start or fake_capture(files)
    configs = {
        name: value if isinstance(value, VerifierConfig) else _config(value)
        for name, value in (verifiers or {}).items()
    }
    return Context(
        root=where,
        env=dict(env or {}),
        case=case or make_case(where),
        start=start,
        verifiers=configs,
        approve=_approver(approve),
        changed=files,
        ack_drift=ack_drift,
    )


def run(verifier: Verifier, requirement: str, context: Context) -> Outcome:
    """Check and run `requirement` as `cortex case verify` does, and return what it would keep.

    `check()` runs first; a refusal raises `CheckRefusedError`. The outcome then goes through
    the kernel's own validation (`cortex.verifiers.base.validated`): the returned copy is cut
    to the stored bounds, and anything the kernel would turn into a `blocked` receipt (not an
    `Outcome`, a status outside the protocol, text that cannot be stored) raises here, so the
    test shows why. Exceptions from `check()` and `run()` propagate as they are.
    """
    problem = verifier.check(requirement, context)
    if problem is not None:
        raise CheckRefusedError(requirement, str(problem))
    return validated(verifier.run(requirement, context))


def _paths(changed: Iterable[str]) -> list[str]:
    if isinstance(changed, str):
        # A lone string would otherwise be read as one path per character.
        msg = "changed is a list of paths, not one string"
        raise TypeError(msg)
    paths = list(changed)
    for path in paths:
        if os.path.isabs(path) or "\\" in path:
            msg = f"changed paths are relative and /-separated, as git lists them: {path!r}"
            raise ValueError(msg)
    return paths


def _config(argv: Sequence[str]) -> VerifierConfig:
    if isinstance(argv, str):
        msg = "a verifier's argv is a list of arguments, not one string"
        raise TypeError(msg)
    return VerifierConfig(argv=tuple(argv), source="cortex.verifiers.testing")


def _approver(
    approve: bool | Callable[[str, Sequence[str]], bool],
) -> Callable[[str, Sequence[str]], bool]:
    if callable(approve):
        return approve
    answer = bool(approve)

    def fixed(name: str, argv: Sequence[str]) -> bool:  # noqa: ARG001 - same answer for all
        return answer

    return fixed
