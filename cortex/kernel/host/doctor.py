"""`cortex doctor`: read-only checks of what Cortex depends on here, each failure with its fix.

It builds the kernel itself (a configuration error is a failed check, not a crash), writes
nothing, and fails (exit 1) when any check fails; warnings do not fail it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import msgspec

from cortex.cases.errors import CortexError
from cortex.kernel.envelope import Result

if TYPE_CHECKING:
    from cortex.kernel.proof.will_run import WillRun

CheckStatus = Literal["ok", "warn", "fail", "skipped"]
GIT_MIN = (2, 24)
"""`--end-of-options` (2.24) is the newest git feature the capture relies on."""
_NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "fuse.sshfs", "9p", "afs"})


class Check(msgspec.Struct, kw_only=True):
    """One check: what was looked at, what was found, and what to do about it."""

    name: str
    status: CheckStatus
    detail: str
    fix: str | None = None


class DoctorFailedError(CortexError):
    """At least one check failed; the report travels with the error (exit 1)."""

    code = "doctor_failed"
    exit_status = 1

    def __init__(self, report: dict[str, object], failed: list[str]) -> None:
        super().__init__(f"{len(failed)} check(s) failed: {', '.join(failed)}")
        self.report = report


def doctor(cwd: str, env: Mapping[str, str]) -> Result:
    """Run every check; raise DoctorFailedError (with the report) if any failed."""
    from cortex.kernel.kernel import Kernel

    checks: list[Check] = [_git(env)]
    try:
        kernel = Kernel(cwd, env, default_actor=env.get("CORTEX_ACTOR") or "cli")
    except CortexError as exc:
        checks.append(
            Check(
                name="configuration",
                status="fail",
                detail=exc.message,
                fix="correct the file and key named above (CONFIG.md documents each key)",
            )
        )
        return _finish(checks)
    config = kernel.config
    checks.append(
        Check(
            name="configuration",
            status="ok",
            detail="read " + (", ".join(config.files) or "no files (all defaults)"),
        )
    )
    info = kernel.store_info
    checks.append(
        Check(
            name="store identity",
            status="ok",
            detail=f"{info.id} ({info.kind}) at {info.root}"
            + (f"; {info.note}" if info.note else ""),
        )
    )
    checks += [_writable(kernel.state_root), _locks(kernel.cases_root)]
    from cortex.kernel.host.doctor_hosts import capture_check, hooks_check, mcp_check

    checks += [
        _plugins(),
        _approvals(kernel),
        _debris(kernel),
        mcp_check(kernel),
        hooks_check(kernel),
        capture_check(kernel),
    ]
    checks.append(_programs(kernel))
    checks += _retention(kernel)
    return _finish(checks)


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def _retention(kernel: object) -> list[Check]:
    """The store's size, and orphaned stores (a moved repository's cases) with their fix."""
    from cortex.kernel.host.adopt import orphans
    from cortex.kernel.host.storage import sizes
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    found = sizes(kernel)
    cases = len(kernel.store.list_ids())
    checks = [
        Check(
            name="store size",
            status="ok",
            detail=(
                f"{cases} case(s), {_megabytes(found['storeBytes'])} in {kernel.cases_root} "
                f"(archived: {_megabytes(found['archiveBytes'])}); state directory "
                f"{_megabytes(found['stateBytes'])}, caches {_megabytes(found['cacheBytes'])}"
            ),
            fix=None if found["cacheBytes"] < 500_000_000 else "cortex recall drop",
        )
    ]
    lost = orphans(kernel)
    if lost:
        ours = [o for o in lost if o.ours]
        shown = "; ".join(
            f"{o.id} ({len(o.cases) + len(o.archived)} case(s), opened at {', '.join(o.roots)})"
            for o in lost
        )
        fix = "cortex adopt --dry-run, then cortex adopt" if ours else None
        checks.append(
            Check(
                name="orphaned stores",
                status="warn",
                detail=f"no case of these stores names a workspace that still exists: {shown}"
                + (
                    f"; {', '.join(o.id for o in ours)} holds this repository's commits"
                    if ours
                    else ""
                ),
                fix=fix or "cortex adopt STORE moves one here; or remove its directory",
            )
        )
    return checks


def _finish(checks: list[Check]) -> Result:
    failed = [check.name for check in checks if check.status == "fail"]
    report: dict[str, object] = {"ok": not failed, "checks": checks}
    if failed:
        raise DoctorFailedError(report, failed)
    return Result(data=report)


def _git(env: Mapping[str, str]) -> Check:
    from cortex.workspace.git import GitNotRunError, run_git

    try:
        proc = run_git(["git", "--version"], cwd=None, env=env, timeout=10)
    except GitNotRunError as exc:
        return Check(
            name="git",
            status="fail",
            detail=f"git cannot run ({exc})",
            fix="install git 2.24 or newer and put it on PATH",
        )
    text = proc.stdout.decode("utf-8", "replace").strip()
    numbers = text.removeprefix("git version ").split(".")
    try:
        version = (int(numbers[0]), int(numbers[1]))
    except (IndexError, ValueError):
        return Check(name="git", status="warn", detail=f"unrecognised version {text!r}")
    if version < GIT_MIN:
        return Check(
            name="git",
            status="fail",
            detail=f"{text} is older than {GIT_MIN[0]}.{GIT_MIN[1]}",
            fix="upgrade git: the work-tree capture needs 2.24 or newer",
        )
    return Check(name="git", status="ok", detail=text)


def _existing(path: str) -> str:
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _writable(state_root: str) -> Check:
    base = _existing(state_root)
    if os.access(base, os.W_OK | os.X_OK):
        return Check(name="state directory", status="ok", detail=f"{state_root} can be written")
    return Check(
        name="state directory",
        status="fail",
        detail=f"{base} is not writable, so {state_root} cannot be created or written",
        fix="set CORTEX_STATE_DIR to a directory you own",
    )


def _locks(cases_root: str) -> Check:
    base = _existing(cases_root)
    kind = _filesystem(base)
    if kind in _NETWORK_FS:
        return Check(
            name="locks",
            status="warn",
            detail=f"{base} is on {kind}: advisory locks and appends may not be reliable there",
            fix="keep the state directory on a local disk (CORTEX_STATE_DIR)",
        )
    try:
        import fcntl
    except ImportError:
        return Check(name="locks", status="ok", detail="no fcntl: portalocker is used")
    fd = os.open(base, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        return Check(
            name="locks",
            status="fail",
            detail=f"flock does not work on {base} ({exc.strerror})",
            fix="keep the state directory on a local disk (CORTEX_STATE_DIR)",
        )
    finally:
        os.close(fd)
    return Check(name="locks", status="ok", detail=f"flock works on {base} ({kind or 'local'})")


def _filesystem(path: str) -> str | None:
    """The mount type of the deepest mount holding `path` (Linux), or None."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            rows = [line.split() for line in mounts]
    except OSError:
        return None
    real = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for row in rows:
        if len(row) < 3:
            continue
        point = row[1].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > best[0]):
            best = (len(point), row[2])
    return None if best is None else best[1]


def _plugins() -> Check:
    from importlib.metadata import entry_points

    from cortex.verifiers.registry import GROUP

    broken: list[str] = []
    names: list[str] = []
    for entry in entry_points(group=GROUP):
        names.append(entry.name)
        try:
            entry.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is what this check reports
            broken.append(f"{entry.name} ({entry.value}): {exc}")
    if broken:
        return Check(
            name="verifier plugins",
            status="fail",
            detail="cannot load " + "; ".join(broken),
            fix="reinstall or uninstall the package that registers it",
        )
    return Check(
        name="verifier plugins",
        status="ok",
        detail="loadable: " + (", ".join(sorted(names)) or "none registered"),
    )


def _runs(kernel: object) -> list[WillRun]:
    """Each configured command verifier, and the pytest default if the repository has tests."""
    from cortex.kernel.host.init import detect
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.proof.will_run import will_run

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    names = sorted(kernel.config.verifiers)
    runs = [will_run(kernel, f"command:{name}") for name in names]
    if "pytest" not in names and "pytest" in detect(kernel.workspace.root):
        runs.append(will_run(kernel, "pytest"))
    return [run for run in runs if run is not None]


def _approvals(kernel: object) -> Check:
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.proof import grants

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    runs = _runs(kernel)
    if not runs:
        return Check(name="verifier approval", status="ok", detail="no command verifiers")
    if grants.env_approves(kernel.env):
        return Check(
            name="verifier approval",
            status="ok",
            detail=f"{grants.APPROVE_VARIABLE} approves every configured command",
        )
    try:
        grants.load(kernel.env)
    except CortexError as exc:
        return Check(
            name="verifier approval",
            status="fail",
            detail=exc.message,
            fix="remove or repair the grants file (it is rewritten by `cortex case trust`)",
        )
    pending = [run for run in runs if not run.approved]
    if pending:
        return Check(
            name="verifier approval",
            status="warn",
            detail="not approved here (a person approves each at a terminal): "
            + ", ".join(run.name for run in pending),
            fix="; ".join(str(run.approve) for run in pending),
        )
    return Check(name="verifier approval", status="ok", detail="every command is approved")


def _debris(kernel: object) -> Check:
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    store = kernel.store
    found: list[str] = []
    unreadable: list[str] = []
    for task_id in store.list_ids():
        try:
            case = store.read_case(task_id)
        except CortexError as exc:
            unreadable.append(f"{task_id}: {exc.message}")
            continue
        found += [f"{task_id}: {warning}" for warning in store.debris(case)]
    from cortex.cases.layout import REMOVING_PREFIX

    try:
        names = os.listdir(store.root)
    except OSError:
        names = []
    found += [
        f"{name[len(REMOVING_PREFIX) :]}: a removal was interrupted; the next `case rm` or "
        "`case open` here finishes it"
        for name in sorted(names)
        if name.startswith(REMOVING_PREFIX)
    ]
    if unreadable:
        return Check(
            name="store health",
            status="fail",
            detail="; ".join(unreadable[:5]),
            fix="run `cortex case audit TASK` on each and restore the files it names",
        )
    if found:
        return Check(
            name="store health",
            status="warn",
            detail="; ".join(found[:5]),
            fix="the next write to each case finishes or rolls back what was interrupted",
        )
    return Check(name="store health", status="ok", detail="no interrupted writes pending")


def _programs(kernel: object) -> Check:
    """Each command verifier's program can be found and started, as its run will look for it.

    Read-only: nothing a repository names is run. A link to a missing interpreter and a script
    whose `#!` names one (a virtualenv copied or moved from another machine) fail too.
    """
    runs = _runs(kernel)
    if not runs:
        return Check(name="verifier programs", status="ok", detail="no command verifiers")
    missing: list[str] = []
    fixes: list[str] = []
    found: list[str] = []
    for run in runs:
        if run.problem is None:
            if run.configured:
                found.append(f"{run.name}: {run.program}")
            else:
                found.append(
                    f"{run.name} (not configured): {' '.join(run.argv)}, {run.source}; "
                    "`cortex init` writes it"
                )
            continue
        missing.append(f"{run.name} runs {run.problem} (verify would be blocked)")
        program = run.argv[0]
        if os.sep in program and not os.path.isabs(program):
            fixes.append(
                f"create {program} in this clone (its virtualenv), or change "
                f"[verifiers.{run.name}].argv in {run.source}"
            )
        else:
            fixes.append(
                f"install {program!r}, or give [verifiers.{run.name}].argv in {run.source} a "
                "program that exists here (`cortex init --force` writes the project's Python)"
            )
    if missing:
        return Check(
            name="verifier programs",
            status="fail",
            detail="; ".join(missing + found),
            fix="; ".join(fixes),
        )
    return Check(name="verifier programs", status="ok", detail="; ".join(found))
