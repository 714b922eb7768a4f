"""`cortex setup claude|codex`: register Cortex's MCP server in an agent host's configuration.

These files belong to the host and to the person using it, so the edit is as small as it can
be: one entry (`mcpServers.cortex` in Claude Code's JSON, `[mcp_servers.cortex]` in Codex's
TOML), every other key kept, and within that entry every key but the ones setup owns (`type`,
`command`, `args`). A file that does not parse is refused and left as it was; a second run with
nothing to change writes nothing; the first change to an existing file keeps a backup next to
it; and the backup and the write are each atomic, the write keeping the file's permission bits.
The host starts the server as `<this interpreter> -m cortex serve`, so it runs the Cortex
installed where `cortex setup` ran.

A host gives up on a tool call after its own timeout, and a verify runs as long as its
verifiers (docs/design/mcp.md). For Codex, setup writes `tool_timeout_sec` in the entry, long
enough for every configured verifier in turn plus a margin (a larger value already there is
kept). Claude Code reads its tool timeout from the `MCP_TOOL_TIMEOUT` environment variable
(milliseconds; its shell, or `env` in `~/.claude/settings.json`), not from the server's entry,
so setup does not write it: the answer says what to set and whether it is set here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import sys
import tomllib
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from cortex.cases.bounds import HOST_CONFIG_MAX, VERIFIER_TIMEOUT_DEFAULT
from cortex.cases.errors import BusyError, InvalidInputError, RefusedError
from cortex.cases.fsio import (
    fsync_dir,
    read_bounded,
    remove_stale_temps,
    write_atomic,
    write_once,
)
from cortex.kernel.config import Config
from cortex.kernel.envelope import Action, Result, step
from cortex.kernel.kernel import Kernel

Host = Literal["claude", "codex"]
Scope = Literal["user", "project"]
HOSTS: tuple[Host, ...] = ("claude", "codex")
DEFAULT_SCOPE: dict[str, Scope] = {"claude": "project", "codex": "user"}
HOST_NAMES = {"claude": "Claude Code", "codex": "Codex"}
SERVER = "cortex"
SERVER_ARGS = ("-m", "cortex", "serve")
BACKUP_SUFFIX = ".cortex-backup"
_ATTEMPTS = 3
OWNED_KEYS = ("type", "command", "args")
"""What setup sets in a Claude Code entry; every other key of an existing entry is kept."""
TOOL_TIMEOUT_MARGIN = 60
"""Seconds a host's tool timeout allows beyond the verifiers' own (capture, commit, start-up)."""
CODEX_TOOL_TIMEOUT = "tool_timeout_sec"
CODEX_TOOL_TIMEOUT_DEFAULT = 60
"""Codex's tool timeout when the entry sets none (its documented default)."""
CLAUDE_TOOL_TIMEOUT = "MCP_TOOL_TIMEOUT"
"""The environment variable Claude Code reads its MCP tool timeout from, in milliseconds."""


class Location(msgspec.Struct, frozen=True, kw_only=True):
    """One place a host reads MCP servers from."""

    host: Host
    scope: Scope
    path: str
    own_dir: bool = False
    """The directory is the host's own (`.codex`), created if missing and refused as a symlink
    (a planted link would send the write elsewhere); not so for the home or workspace."""

    @property
    def format(self) -> Literal["json", "toml"]:
        """How the file is written."""
        return "json" if self.host == "claude" else "toml"

    @property
    def new_file_mode(self) -> int:
        """A user's own file may hold secrets; a project file is meant to be shared."""
        return 0o600 if self.scope == "user" else 0o644


def location(host: str, scope: str | None, env: Mapping[str, str], root: str) -> Location:
    """Where `cortex setup HOST --scope SCOPE` writes (HOME and CODEX_HOME from `env`)."""
    if host not in HOSTS:
        raise InvalidInputError(f"unknown host {host!r} (expected one of: {', '.join(HOSTS)})")
    chosen: Scope
    if scope is None:
        chosen = DEFAULT_SCOPE[host]
    elif scope == "user":
        chosen = "user"
    elif scope == "project":
        chosen = "project"
    else:
        raise InvalidInputError(f"--scope must be user or project, not {scope!r}")
    if host == "claude":
        directory = root if chosen == "project" else _absolute(env, "HOME")
        name = ".mcp.json" if chosen == "project" else ".claude.json"
        return Location(host="claude", scope=chosen, path=os.path.join(directory, name))
    if chosen == "project":
        directory = os.path.join(root, ".codex")
    elif env.get("CODEX_HOME"):
        directory = _absolute(env, "CODEX_HOME")
    else:
        directory = os.path.join(_absolute(env, "HOME"), ".codex")
    path = os.path.join(directory, "config.toml")
    return Location(host="codex", scope=chosen, path=path, own_dir=True)


def all_locations(env: Mapping[str, str], root: str) -> list[Location]:
    """Every place `cortex setup` can write, for `doctor` (user scopes need HOME/CODEX_HOME)."""
    found: list[Location] = []
    for host in HOSTS:
        for scope in ("project", "user"):
            try:
                found.append(location(host, scope, env, root))
            except InvalidInputError:
                continue  # no usable HOME: nothing can be registered there
    return found


def _absolute(env: Mapping[str, str], name: str) -> str:
    value = env.get(name) or ""
    if not os.path.isabs(value):
        shown = repr(value) if value else "not set"
        raise InvalidInputError(f"{name} is {shown}; it must be an absolute directory")
    return value


def server_entry(interpreter: str | None = None) -> dict[str, Any]:
    """The command and arguments that start the server with this (or the given) interpreter."""
    command = interpreter if interpreter is not None else sys.executable
    if not command:
        msg = "this Python cannot name its own interpreter (sys.executable is empty)"
        raise InvalidInputError(msg)
    command = os.path.abspath(command)
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        # JSON and TOML hold text: an undecodable path would reach the host as another path.
        msg = f"the interpreter path {command!a} is not valid UTF-8; install Cortex elsewhere"
        raise InvalidInputError(msg) from None
    return {"command": command, "args": list(SERVER_ARGS)}


def longest_verifier(config: Config) -> float:
    """The longest timeout of one configured verifier (the default when none is configured)."""
    return max((v.timeout for v in config.verifiers.values()), default=VERIFIER_TIMEOUT_DEFAULT)


def tool_timeout(config: Config) -> int:
    """Seconds a host should wait for a verify here: its verifiers in turn, plus a margin.

    Every configured verifier counts (a plan may require them all), and at least the default
    timeout does (a plan's `pytest` may run unconfigured).
    """
    total = sum(v.timeout for v in config.verifiers.values())
    return math.ceil(max(total, VERIFIER_TIMEOUT_DEFAULT) + TOOL_TIMEOUT_MARGIN)


def _timeout_note(where: Location, seconds: int, env: Mapping[str, str]) -> dict[str, Any]:
    if where.host == "codex":
        return {"setting": CODEX_TOOL_TIMEOUT, "seconds": seconds, "written": True}
    return {
        "setting": CLAUDE_TOOL_TIMEOUT,
        "seconds": seconds,
        "written": False,
        "milliseconds": seconds * 1000,
        "current": env.get(CLAUDE_TOOL_TIMEOUT),
    }


def setup(
    kernel: Kernel,
    host: str,
    *,
    scope: str | None = None,
    dry_run: bool = False,
    interpreter: str | None = None,
) -> Result:
    """Register the server with `host` (see the module docstring); `interpreter` is for tests."""
    where = location(host, scope, kernel.env, kernel.workspace.root)
    entry = server_entry(interpreter)
    seconds = tool_timeout(kernel.config)
    if where.host == "codex":
        entry[CODEX_TOOL_TIMEOUT] = seconds
    if not dry_run and _directory_ready(where):
        # A run killed before its rename leaves a temp file, a full copy of the file, that
        # nothing else removes.
        name = os.path.basename(where.path)
        remove_stale_temps(os.path.dirname(where.path), {name, name + BACKUP_SUFFIX})
    for _ in range(_ATTEMPTS):
        original = _read_target(where)
        try:
            new, kept = _compose(where, original, entry)
        except InvalidInputError as exc:
            exc.message += "; the file was left as it is"
            raise
        backup = where.path + BACKUP_SUFFIX
        wants_backup = new is not None and original is not None and not os.path.lexists(backup)
        data = {
            "host": where.host,
            "scope": where.scope,
            "path": where.path,
            "changed": new is not None,
            "created": new is not None and original is None,
            "backup": backup if wants_backup else None,
            "entry": entry,  # not the host's env: it may hold secrets
            "kept": kept,  # the names of the existing entry's other keys, never their values
            "dryRun": dry_run,
            "toolTimeout": _timeout_note(where, seconds, kernel.env),
        }
        if dry_run or new is None:
            data["files"] = _files(kernel, where, written=False, backup=None)
            return Result(
                data=data,
                actions=_actions(where, dry_run=dry_run, changed=new is not None, files=data),
            )
        if _write(where, original, new, backup if wants_backup else None):
            data["files"] = _files(
                kernel, where, written=True, backup=backup if wants_backup else None
            )
            return Result(
                data=data, actions=_actions(where, dry_run=False, changed=True, files=data)
            )
    # The host itself rewrites its file (Claude Code saves ~/.claude.json often): retry later.
    raise BusyError(f"{where.path} kept changing while it was being edited; run the command again")


def _files(
    kernel: Kernel, where: Location, *, written: bool, backup: str | None
) -> list[dict[str, object]]:
    """The host file (and a backup written next to it), and whether each is in a commit.

    A project-scope file lives in the repository: uncommitted, it is a change of the next
    case's task. Its backup is not meant to be committed: once checked, delete it.
    """
    from cortex.kernel.host import files

    if not os.path.lexists(where.path):
        return []  # a dry run of a new file: nothing is there yet
    entries = files.describe(kernel, [(where.path, written)])
    if backup is not None:
        for entry in files.describe(kernel, [(backup, True)]):
            if entry["inRepository"]:
                entry["advice"] = (
                    "the previous file, kept in case the edit is unwanted: delete it once "
                    "checked (it changes the working tree until then)"
                )
            entries.append(entry)
    return entries


def _actions(
    where: Location, *, dry_run: bool, changed: bool, files: dict[str, Any]
) -> list[Action]:
    from cortex.kernel.host.files import commit_action

    if dry_run and changed:
        return [step(f"setup.{where.host}", "write it", scope=where.scope)]
    host_file = [e for e in files.get("files", []) if e["path"] == where.path]
    return [
        *commit_action(host_file),
        step("doctor", "check that the host can start the server"),
    ]


# Reading and parsing.


def _read_target(where: Location) -> bytes | None:
    """The file's bytes, or None if it does not exist; never through a symlink."""
    if not _directory_ready(where):
        return None
    return _current(where.path)


def _directory_ready(where: Location) -> bool:
    """Whether the file's directory exists; refuses a symlink where Cortex owns the directory."""
    directory = os.path.dirname(where.path)
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        if not where.own_dir:
            raise InvalidInputError(f"{directory} does not exist") from None
        return False
    if where.own_dir and stat.S_ISLNK(mode):
        msg = (
            f"{directory} is a symlink; refusing to follow it (it could send the write "
            "anywhere). Point CODEX_HOME at the real directory, or replace the link"
        )
        raise RefusedError(msg)
    if not os.path.isdir(directory):
        raise InvalidInputError(f"{directory} is not a directory")
    return True


def _current(path: str) -> bytes | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        msg = (
            f"{path} is a symlink; refusing to follow it (replacing it would cut the link, and "
            "writing through it would edit a file elsewhere). Edit the file it points to by hand"
        )
        raise RefusedError(msg)
    if not stat.S_ISREG(mode):
        raise InvalidInputError(f"{path} is not a regular file")
    return read_bounded(path, HOST_CONFIG_MAX)


def read_for_check(path: str) -> bytes | None:
    """For `doctor`: the file's bytes following symlinks (reading is harmless), None if absent."""
    real = os.path.realpath(path)
    if not os.path.lexists(real):
        return None
    return read_bounded(real, HOST_CONFIG_MAX)


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            # Rewriting would silently keep only the last: not "every other key exactly".
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class JsonNumber:
    """A JSON number exactly as written, equal to another when the text is.

    Through float, `1E2`, `-0`, `1.10`, `1e-400` and digits past double precision would
    change, and `1e400` would become `Infinity`, which is not JSON at all.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        if not text.isascii():  # the parser matches ASCII digits only; this keeps it so
            raise ValueError(f"{text!r} is not a JSON number")
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return self.text


def parse_json(path: str, raw: bytes) -> dict[str, Any]:
    """A Claude Code configuration: a JSON object whose `mcpServers`, if any, is an object.

    Numbers come back as `JsonNumber`, so writing the document again keeps them as they were.
    """
    try:
        document = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_refuse_duplicates,
            parse_constant=_no_constants,
            parse_float=JsonNumber,
            parse_int=JsonNumber,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidInputError(f"{path} is nested too deeply to be read") from None
    if not isinstance(document, dict):
        kind = "number" if isinstance(document, JsonNumber) else type(document).__name__
        msg = f"{path} holds a JSON {kind}, not an object"
        raise InvalidInputError(msg)
    if "mcpServers" in document and not isinstance(document["mcpServers"], dict):
        raise InvalidInputError(f"{path}: mcpServers is not an object")
    return document


def parse_toml(path: str, raw: bytes) -> dict[str, Any]:
    """A Codex configuration: TOML whose `mcp_servers`, if any, is a table."""
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid TOML ({exc})") from None
    except ValueError as exc:
        # Valid TOML Python will not read, such as an integer past 4300 digits.
        raise InvalidInputError(f"{path} cannot be read ({exc})") from None
    except RecursionError:
        raise InvalidInputError(f"{path} is nested too deeply to be read") from None
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInputError(f"{path}: mcp_servers is not a table")
    return document


def registered(where: Location, raw: bytes) -> object:
    """The `cortex` entry the file registers (None if none); raises if it does not parse."""
    if where.format == "json":
        servers = parse_json(where.path, raw).get("mcpServers") or {}
    else:
        servers = parse_toml(where.path, raw).get("mcp_servers") or {}
    return servers.get(SERVER)


# Composing the new text.


def _compose(
    where: Location, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    """The new file, and the names of the existing entry's keys that were kept as they were.

    The file is None when the entry is already there as it should be.
    """
    try:
        if where.format == "json":
            return _compose_json(where.path, original, entry)
        return _compose_toml(where.path, original, entry)
    except RecursionError:
        # Nesting that parsed can still be too deep to write out or to compare.
        raise InvalidInputError(f"{where.path} is nested too deeply to be edited") from None


def _compose_json(
    path: str, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    document = parse_json(path, original) if original is not None else {}
    servers = document.setdefault("mcpServers", {})
    old = servers.get(SERVER)
    wanted: dict[str, Any] = {"type": "stdio", **entry}
    # Every other key may have been set by hand (`env`, `timeout`, `cwd`, ...): as with the
    # Codex table, setup changes only what it owns.
    kept = {k: v for k, v in old.items() if k not in OWNED_KEYS} if isinstance(old, dict) else {}
    names = list(kept)
    if not isinstance(kept.get("env"), dict):
        # An entry always gets an `env` object (the form setup has always written); one that is
        # not an object cannot be used, so it is replaced (the backup keeps it).
        if "env" in kept:
            names.remove("env")
        kept["env"] = {}
    wanted.update(kept)
    if old == wanted:
        return None, names
    servers[SERVER] = wanted
    data = _dump_json(document)
    try:
        readback = parse_json(path, data)
    except InvalidInputError:
        readback = None
    if readback != document:
        msg = f"{path} would not read back as intended; nothing was written"
        raise RefusedError(msg)
    return data, names


def _dump_json(document: dict[str, Any]) -> bytes:
    """The document as JSON, each `JsonNumber` written exactly as it was read."""
    # json.dumps cannot emit raw text: each number goes out as a placeholder string, replaced
    # afterwards. The random nonce makes a collision with a string in the file impossible.
    nonce = os.urandom(16).hex()
    texts: list[str] = []

    def placeholder(value: object) -> str:
        if not isinstance(value, JsonNumber):
            raise TypeError(f"{type(value).__name__} is not JSON")
        texts.append(value.text)
        return f"{nonce}-{len(texts) - 1}"

    try:
        text = json.dumps(document, indent=2, ensure_ascii=False, default=placeholder) + "\n"
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a `\ud800` escape) has no UTF-8 form; escaped, it reads the same.
        texts.clear()
        data = (json.dumps(document, indent=2, default=placeholder) + "\n").encode("ascii")
    held = re.compile(b'"' + nonce.encode() + b'-([0-9]+)"')
    return held.sub(lambda match: texts[int(match.group(1))].encode("ascii"), data)


def _compose_toml(
    path: str, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    from cortex.kernel.host import toml_edit

    document = parse_toml(path, original) if original is not None else {}
    old = (document.get("mcp_servers") or {}).get(SERVER)
    if old is not None and not isinstance(old, dict):
        msg = f"{path}: mcp_servers.{SERVER} is not a table"
        raise InvalidInputError(msg)
    had = (old or {}).get(CODEX_TOOL_TIMEOUT)
    wanted = entry.get(CODEX_TOOL_TIMEOUT)
    if is_number(had) and is_number(wanted) and float(had) >= float(wanted):  # type: ignore[arg-type]
        entry[CODEX_TOOL_TIMEOUT] = had  # a person chose to wait longer: keep it
    names = [key for key in old or {} if key not in entry]
    if old is not None and all(old.get(key) == value for key, value in entry.items()):
        return None, names
    text = original.decode("utf-8") if original is not None else ""
    try:
        new_text = toml_edit.set_table(text, ("mcp_servers", SERVER), entry)
    except toml_edit.UnsafeEditError as exc:
        msg = (
            f"cannot safely edit {path}: {exc}. Replace the entry by hand with a "
            f"[mcp_servers.{SERVER}] table of command and args (or delete it and run this "
            "again); the file was left as it is"
        )
        raise RefusedError(msg) from None
    return new_text.encode("utf-8"), names


def is_number(value: object) -> bool:
    """An int or a float (a bool is neither, here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


# Writing.


def _write(where: Location, original: bytes | None, new: bytes, backup: str | None) -> bool:
    """Back up, then replace atomically; False if the file changed since it was read."""
    if not _directory_ready(where):
        _make_dir(where)
    mode = os.lstat(where.path).st_mode & 0o777 if original is not None else where.new_file_mode
    if backup is not None and original is not None:
        if _current(where.path) != original:
            return False
        _write_backup(backup, original, mode)

    def unchanged() -> bool:
        return _current(where.path) == original

    # The mode is set before the rename: the file is never visible with other permissions.
    return write_atomic(where.path, new, mode=mode, unchanged=unchanged)


def _make_dir(where: Location) -> None:
    directory = os.path.dirname(where.path)
    parent = os.path.dirname(directory)
    if where.scope == "user":
        from cortex.cases.fsio import make_private_dirs

        make_private_dirs(directory)  # the user's own configuration directory
        return
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o755)  # a project directory, like any other in the repository
    _directory_ready(where)  # what stands there now must still be a real directory
    fsync_dir(parent)


def _write_backup(path: str, data: bytes, mode: int) -> None:
    """The original bytes, never group-readable, and whole or absent.

    A later run trusts any backup it finds, so one torn by a crash must never appear under the
    backup's name; a concurrent run that backed up the same file a moment earlier wins.
    """
    write_once(path, data, mode=mode & 0o600)
