"""`doctor`'s checks of the agent hosts: the MCP registrations and the hook sets setup wrote.

Each place `cortex setup` writes is read (never through a symlink's target's writer, never run
if the repository itself names the program), and judged: does it start this Cortex, is the
hook set whole and from the current template, does its program exist; and did a hook fail
since it last ran well (`hooks.log`, docs/design/hosts.md section 2).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from cortex.cases.errors import CortexError
from cortex.kernel.host.doctor import Check, CheckStatus

_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*")


def mcp_check(kernel: object) -> Check:
    """Each place `cortex setup` writes: does a registration there start a working server?"""
    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.host.writing import read_for_check
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    found: list[tuple[CheckStatus, str]] = []
    fixes: list[str] = []
    for where in setup_host.all_locations(kernel.env, kernel.workspace.root):
        label = f"{where.host} {where.scope} ({where.path})"
        try:
            raw = read_for_check(where.path)
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


def hooks_check(kernel: object) -> Check:
    """Each hooks file setup writes: installed, current, runnable; and the hooks' own failures."""
    from cortex.kernel.host import hook_log
    from cortex.kernel.host import hooks as hook_set
    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.host.formats import parse_json
    from cortex.kernel.host.writing import read_for_check
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101 - typed loosely to keep the import lazy
    found: list[tuple[CheckStatus, str]] = []
    fixes: list[str] = []
    for where in setup_host.all_locations(kernel.env, kernel.workspace.root):
        at = setup_host.hooks_location(where, kernel.env, kernel.workspace.root)
        label = f"{where.host} {where.scope} ({at.path})"
        repair = f"cortex setup {where.host} --scope {where.scope}"
        try:
            raw = read_for_check(at.path)
            installed = hook_set.installed(parse_json(at.path, raw)) if raw is not None else {}
        except (CortexError, OSError) as exc:
            why = exc.message if isinstance(exc, CortexError) else f"cannot be read ({exc})"
            found.append(("fail", f"{label}: {why}"))
            fixes.append(f"repair or move aside {at.path}")
            continue
        if not installed:
            continue
        mark, detail = _hook_set(kernel, where.host, installed)
        found.append((mark, f"{label}: {detail}"))
        if mark != "ok":
            fixes.append(repair)
    trouble = _hook_failures(
        hook_log.read(kernel.state_root), hook_log.last_seen(kernel.state_root)
    )
    if trouble is not None:
        found.append(("warn", trouble))
        fixes.append("see docs/design/hosts.md, section 2; CORTEX_DEBUG=1 prints the cause")
    if not found:
        detail = "not installed; cortex setup claude|codex installs them"
        return Check(name="host hooks", status="ok", detail=detail)
    statuses = {mark for mark, _ in found}
    worst: CheckStatus = "fail" if "fail" in statuses else ("warn" if "warn" in statuses else "ok")
    return Check(
        name="host hooks",
        status=worst,
        detail="; ".join(text for _, text in found),
        fix="; ".join(dict.fromkeys(fixes)) or None,
    )


def capture_check(kernel: object) -> Check:
    """Whether the host's activity is recorded here, and when a tool call last was."""
    import time

    from cortex.kernel.host import hook_log
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101
    seen = hook_log.last_seen(kernel.state_root)
    times = [moment for name, moment in seen.items() if name.endswith(".capture")]
    last = "never" if not times else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(max(times)))
    if not kernel.config.hooks.capture:
        detail = f"off here ([hooks] capture = false); last recorded on this machine: {last}"
    else:
        detail = f"on here; a tool call last recorded on this machine: {last}"
    return Check(name="activity capture", status="ok", detail=detail)


def _hook_set(
    kernel: object, host: str, installed: dict[str, list[str]]
) -> tuple[CheckStatus, str]:
    """Whether one installed hook set is whole, from the current template, and runnable."""
    import shlex
    import shutil

    from cortex.kernel.host import hooks as hook_set
    from cortex.kernel.kernel import Kernel

    assert isinstance(kernel, Kernel)  # noqa: S101
    wanted = {event for event, _, _ in hook_set.TEMPLATE.get(host, ())}
    missing = sorted(wanted - set(installed))
    current = hook_set.digest(host)
    digests = {m.group(1) for cmds in installed.values() for c in cmds
               for m in [hook_set.DIGEST.search(c)] if m}  # fmt: skip
    if digests != {current} or missing:
        what = f"missing {', '.join(missing)}" if missing else "from another version of Cortex"
        return "fail", f"the hook set is stale ({what}; template now {current})"
    for commands in installed.values():
        for text in commands:
            try:
                words = shlex.split(text.replace("$CLAUDE_PROJECT_DIR", kernel.workspace.root))
            except ValueError:
                return "fail", f"cannot read the hook command {text!r}"
            program = words[0] if words else ""
            if os.path.isabs(program):
                path: str | None = program
            elif os.sep in program:  # relative to the repository, as setup wrote it
                path = os.path.join(kernel.workspace.root, program)
            else:
                path = shutil.which(program, path=kernel.env.get("PATH"))
            if path is None or not os.access(path, os.X_OK):
                return "fail", f"the hooks run {program}, which does not exist here"
    return "ok", f"{sum(map(len, installed.values()))} hooks, current (template {current})"


def _hook_failures(records: list[dict[str, object]], seen: dict[str, float]) -> str | None:
    """The latest hook failure that no success of the same event followed, if any."""
    import calendar
    import time

    for record in reversed(records):
        event, host, moment = record.get("event"), record.get("host"), record.get("time")
        if not isinstance(moment, str):
            continue
        try:
            when = calendar.timegm(time.strptime(moment, "%Y-%m-%dT%H:%M:%SZ"))
        except ValueError:
            continue
        if seen.get(f"{host}.{event}", 0.0) > when + 1:
            return None  # it ran fine since
        return f"the last {host} {event} hook failed at {moment} ({record.get('error')})"
    return None


def _host_timeout(entry: object, where: object, kernel: object) -> tuple[str | None, str]:
    """Whether the host gives up on a tool call before the longest verifier here may end.

    Codex reads `tool_timeout_sec` from the entry (60 s when absent). Claude Code reads
    `MCP_TOOL_TIMEOUT` (milliseconds) from its environment, or `env` in ~/.claude/settings.json;
    unset, its default is not documented, so nothing is claimed about it.
    """
    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.host.formats import is_number
    from cortex.kernel.kernel import Kernel

    assert isinstance(where, setup_host.Location)  # noqa: S101 - typed loosely: lazy import
    assert isinstance(kernel, Kernel)  # noqa: S101
    longest = setup_host.longest_verifier(kernel.config)
    if where.host == "codex":
        value = entry.get(setup_host.CODEX_TOOL_TIMEOUT) if isinstance(entry, dict) else None
        fix = f"cortex setup codex --scope {where.scope}"
        if value is None:
            value = setup_host.CODEX_TOOL_TIMEOUT_DEFAULT
        if not is_number(value):
            return f"tool_timeout_sec is {value!r}, not a number of seconds", fix
        if float(value) < longest:
            return (
                f"Codex gives up on a tool call after {value} s (tool_timeout_sec), before the "
                f"longest verifier here may end ({longest:g} s)"
            ), fix
        return None, fix
    raw = kernel.env.get(setup_host.CLAUDE_TOOL_TIMEOUT) or _claude_settings_timeout(
        kernel.env, kernel.workspace.root
    )
    fix = f"cortex setup claude --scope {where.scope} (it writes {setup_host.CLAUDE_TOOL_TIMEOUT})"
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


def _console_script(found: str, command: str) -> tuple[CheckStatus, str]:
    """A `cortex serve` entry: this installation's console script, or another one."""
    import sys

    ours = os.path.realpath(os.path.join(os.path.dirname(sys.executable), "cortex"))
    if os.path.realpath(found) == ours:
        return "ok", f"{command} (this installation)"
    return "warn", f"{command} is another Cortex installation, not run to check it"


def _claude_settings_timeout(env: Mapping[str, str], root: str) -> str | None:
    """`env.MCP_TOOL_TIMEOUT` as Claude Code reads it: the project's settings over the user's."""
    import json

    from cortex.kernel.host import setup as setup_host
    from cortex.kernel.host.writing import read_for_check

    home = env.get("HOME")
    places = [os.path.join(root, ".claude", "settings.local.json")]
    places.append(os.path.join(root, ".claude", "settings.json"))
    if home and os.path.isabs(home):
        places.append(os.path.join(home, ".claude", "settings.json"))
    for place in places:
        try:
            raw = read_for_check(place)
            settings = json.loads(raw) if raw is not None else None
        except (CortexError, OSError, ValueError, RecursionError):
            continue
        variables = settings.get("env") if isinstance(settings, dict) else None
        value = (
            variables.get(setup_host.CLAUDE_TOOL_TIMEOUT) if isinstance(variables, dict) else None
        )
        if value is not None:
            return str(value)
    return None


def _registration(entry: object, where: object, kernel: object) -> tuple[CheckStatus, str]:
    """Whether one `cortex` entry starts this Cortex, may start another, or cannot start.

    The forms setup writes (`cortex.kernel.host.program`): `cortex serve` from PATH, a
    repository's `.venv/bin/cortex serve` (relative to the repository), an absolute console
    script, or `<python> -m cortex serve`.
    """
    import shutil
    import subprocess
    import sys

    from cortex.kernel.host.setup import Location
    from cortex.kernel.kernel import Kernel

    assert isinstance(where, Location)  # noqa: S101 - typed loosely to keep the import lazy
    assert isinstance(kernel, Kernel)  # noqa: S101
    command = entry.get("command") if isinstance(entry, dict) else None
    args = entry.get("args", []) if isinstance(entry, dict) else None
    if not isinstance(command, str) or not command:
        return "fail", "the cortex entry has no command"
    root = kernel.workspace.root.rstrip(os.sep) + os.sep
    if os.path.isabs(command):
        found: str | None = command
    elif os.sep in command:
        found = os.path.join(root, command)  # relative to the repository, as setup wrote it
    else:
        found = shutil.which(command, path=kernel.env.get("PATH"))
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        where_looked = "on PATH" if os.sep not in command else "in the repository"
        return "fail", f"{command} does not exist or is not executable ({where_looked})"
    if args == ["serve"]:
        return _console_script(found, command)
    if args != ["-m", "cortex", "serve"]:
        return "warn", f"starts {command} {args!r}, not `cortex serve`; not checked further"
    if found == os.path.abspath(sys.executable):
        return "ok", "this interpreter"
    # Running what a repository's own file names would let a clone run code on `doctor`.
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
