"""`cortex doctor`: read-only checks of what Cortex depends on here, each failure with its fix.

It builds the kernel itself (a configuration error is a failed check, not a crash), writes
nothing, and fails (exit 1) when any check fails; warnings do not fail it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import msgspec

from cortex.cases.errors import CortexError
from cortex.kernel.envelope import Result

if TYPE_CHECKING:
    from cortex.kernel.will_run import WillRun

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
    checks += [_plugins(), _approvals(kernel), _debris(kernel), _mcp(kernel)]
    checks.append(_programs(kernel))
    return _finish(checks)


def _finish(checks: list[Check]) -> Result:
    failed = [check.name for check in checks if check.status == "fail"]
    report: dict[str, object] = {"ok": not failed, "checks": checks}
    if failed:
        raise DoctorFailedError(report, failed)
    return Result(data=report)


def _git(env: Mapping[str, str]) -> Check:
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "--version"], env=dict(env), capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
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
    from cortex.kernel.will_run import will_run

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    names = sorted(kernel.config.verifiers)
    runs = [will_run(kernel, f"command:{name}") for name in names]
    if "pytest" not in names and "pytest" in detect(kernel.workspace.root):
        runs.append(will_run(kernel, "pytest"))
    return [run for run in runs if run is not None]


def _approvals(kernel: object) -> Check:
    from cortex.kernel import grants
    from cortex.kernel.kernel import Kernel

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


_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*")


def _mcp(kernel: object) -> Check:
    """Each place `cortex setup` writes: does a registration there start a working server?"""
    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    found: list[tuple[CheckStatus, str]] = []
    fixes: list[str] = []
    for where in setup_host.all_locations(kernel.env, kernel.workspace.root):
        label = f"{where.host} {where.scope} ({where.path})"
        try:
            raw = setup_host.read_for_check(where.path)
            entry = None if raw is None else setup_host.registered(where, raw)
        except (CortexError, OSError) as exc:
            why = exc.message if isinstance(exc, CortexError) else f"cannot be read ({exc})"
            found.append(("fail", f"{label}: {why}"))
            host = setup_host.HOST_NAMES[where.host]
            fixes.append(f"repair or move aside {where.path} (it is {host}'s configuration)")
            continue
        if entry is None:
            continue
        mark, detail = _registration(entry, where, kernel)
        found.append((mark, f"{label}: {detail}"))
        if mark != "ok":
            fixes.append(f"cortex setup {where.host} --scope {where.scope}")
        short, fix = _host_timeout(entry, where, kernel)
        if short is not None:
            found.append(("warn", f"{label}: {short}"))
            fixes.append(fix)
    if not found:
        detail = "not registered; run cortex setup claude|codex"
        return Check(name="MCP server", status="ok", detail=detail)
    statuses = {mark for mark, _ in found}
    worst: CheckStatus = "fail" if "fail" in statuses else ("warn" if "warn" in statuses else "ok")
    return Check(
        name="MCP server",
        status=worst,
        detail="; ".join(text for _, text in found),
        fix="; ".join(dict.fromkeys(fixes)) or None,
    )


def _host_timeout(entry: object, where: object, kernel: object) -> tuple[str | None, str]:
    """Whether the host gives up on a tool call before the longest verifier here may end.

    Codex reads `tool_timeout_sec` from the entry (60 s when absent). Claude Code reads
    `MCP_TOOL_TIMEOUT` (milliseconds) from its environment, or `env` in ~/.claude/settings.json;
    unset, its default is not documented, so nothing is claimed about it.
    """
    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.kernel import Kernel

    assert isinstance(where, setup_host.Location)  # noqa: S101 - typed loosely: lazy import
    assert isinstance(kernel, Kernel)  # noqa: S101
    longest = setup_host.longest_verifier(kernel.config)
    needed = setup_host.tool_timeout(kernel.config)
    if where.host == "codex":
        value = entry.get(setup_host.CODEX_TOOL_TIMEOUT) if isinstance(entry, dict) else None
        fix = f"cortex setup codex --scope {where.scope}"
        if value is None:
            value = setup_host.CODEX_TOOL_TIMEOUT_DEFAULT
        if not setup_host.is_number(value):
            return f"tool_timeout_sec is {value!r}, not a number of seconds", fix
        if float(value) < longest:
            return (
                f"Codex gives up on a tool call after {value} s (tool_timeout_sec), before the "
                f"longest verifier here may end ({longest:g} s)"
            ), fix
        return None, fix
    raw = kernel.env.get(setup_host.CLAUDE_TOOL_TIMEOUT) or _claude_settings_timeout(kernel.env)
    fix = f"set {setup_host.CLAUDE_TOOL_TIMEOUT}={needed * 1000} (ms) where Claude Code starts"
    if raw is None:
        return None, fix
    try:
        milliseconds = int(str(raw).strip())
    except ValueError:
        return f"{setup_host.CLAUDE_TOOL_TIMEOUT} is {raw!r}, not milliseconds", fix
    if milliseconds / 1000 < longest:
        return (
            f"Claude Code gives up on a tool call after {milliseconds} ms "
            f"({setup_host.CLAUDE_TOOL_TIMEOUT}), before the longest verifier here may end "
            f"({longest:g} s)"
        ), fix
    return None, fix


def _claude_settings_timeout(env: Mapping[str, str]) -> str | None:
    """`env.MCP_TOOL_TIMEOUT` of ~/.claude/settings.json, if it sets one."""
    import json

    from cortex.kernel.host import setup as setup_host

    home = env.get("HOME")
    if not home or not os.path.isabs(home):
        return None
    try:
        raw = setup_host.read_for_check(os.path.join(home, ".claude", "settings.json"))
        settings = json.loads(raw) if raw is not None else None
    except (CortexError, OSError, ValueError, RecursionError):
        return None
    variables = settings.get("env") if isinstance(settings, dict) else None
    value = variables.get(setup_host.CLAUDE_TOOL_TIMEOUT) if isinstance(variables, dict) else None
    return None if value is None else str(value)


def _registration(entry: object, where: object, kernel: object) -> tuple[CheckStatus, str]:
    """Whether one `cortex` entry starts this Cortex, may start another, or cannot start."""
    import shutil
    import subprocess
    import sys

    from cortex.kernel.host.setup import SERVER_ARGS, Location
    from cortex.kernel.kernel import Kernel

    assert isinstance(where, Location)  # noqa: S101 - typed loosely to keep the import lazy
    assert isinstance(kernel, Kernel)  # noqa: S101
    command = entry.get("command") if isinstance(entry, dict) else None
    args = entry.get("args", []) if isinstance(entry, dict) else None
    if not isinstance(command, str) or not command:
        return "fail", "the cortex entry has no command"
    found = (
        command if os.path.isabs(command) else shutil.which(command, path=kernel.env.get("PATH"))
    )
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        return "fail", f"{command} does not exist or is not executable"
    if args != list(SERVER_ARGS):
        return "warn", f"starts {command} {args!r}, not `-m cortex serve`; not checked further"
    if found == os.path.abspath(sys.executable):
        return "ok", "this interpreter"
    # Running what a repository's own file names would let a clone run code on `doctor`.
    root = kernel.workspace.root.rstrip(os.sep) + os.sep
    real = os.path.realpath(found)
    inside = any(path.startswith(root) for path in (os.path.abspath(found), real))
    if (where.scope == "project" and inside) or not _PYTHON_NAME.fullmatch(os.path.basename(real)):
        return "warn", f"{command} is another interpreter, not run to check it"
    try:
        # -I: as installed (no PYTHONPATH, no user site, and never the directory it starts in,
        # where a repository could plant a `cortex` package); -B: write no bytecode.
        proc = subprocess.run(
            [found, "-I", "-B", "-c", "import cortex"],
            cwd=os.sep,
            env=dict(kernel.env),
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "fail", f"{command} cannot run ({exc})"
    if proc.returncode != 0:
        return "fail", f"{command} cannot import cortex"
    return "warn", f"{command} is another interpreter (it imports cortex, maybe another version)"
