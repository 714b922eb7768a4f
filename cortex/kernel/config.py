"""Configuration: files and environment, validated strictly, documented key by key in CONFIG.md.

Sources, lowest precedence first: the global `config.toml`, `[tool.cortex]` in the repository's
`pyproject.toml`, `cortex.toml` in the repository root, then environment variables. An unknown
key, a wrong type or a bad value fails closed with the source and the key named. The caller
passes the environment in; nothing here reads `os.environ`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from cortex.cases.bounds import (
    ARGV_ITEM_MAX,
    ARGV_MAX,
    CONFIG_FILE_MAX,
    CONFIG_VERIFIERS_MAX,
    LOCK_TIMEOUT_DEFAULT,
    LOCK_TIMEOUT_MAX,
    PRUNE_AFTER_DEFAULT,
    REDACT_LITERAL_MAX,
    REDACT_LITERAL_MIN,
    REDACT_LITERALS_MAX,
    STALE_AFTER_MAX,
    VERIFIER_TIMEOUT_DEFAULT,
    VERIFIER_TIMEOUT_MAX,
)
from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import read_bounded
from cortex.cases.state_dir import state_dir
from cortex.kernel.errors import ConfigError
from cortex.verifiers.config import REQUIREMENT, VERIFIER_KEYS, VERIFIER_KINDS, VerifierConfig

SourceKind = Literal["global", "pyproject", "repo", "env"]

FILE_KEYS = (
    "cases_dir",
    "redact_literals",
    "lock_timeout",
    "verifiers",
    "recall_brief",
    "share",
    "hooks",
    "prune_older_than",
    "review",
)
"""Keys accepted in configuration files (CONFIG.md documents each one)."""

ENV_KEYS = {
    "cases_dir": "CORTEX_CASES_DIR",
    "redact_literals": "CORTEX_REDACT_LITERALS",
    "lock_timeout": "CORTEX_LOCK_TIMEOUT",
    "recall_brief": "CORTEX_RECALL_BRIEF",
    "prune_older_than": "CORTEX_PRUNE_OLDER_THAN",
}
"""Environment variables that set a configuration key (they override files)."""


class ShareConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[share]`: whether this repository's cases may leave the machine, and to which remote."""

    enabled: bool = False
    remote: str = "origin"


SHARE_KEYS = ("enabled", "remote")

ACCEPT_LEVELS = ("reproduced", "local", "remote", "any")
"""`[review] accept`: which origins of proof the merge gate approves, strictest first."""
REVIEW_KEYS = ("accept", "require")
REVIEW_REQUIRE_MAX = 32
"""`[review] require`: at most this many verifiers every case must have run."""


class HooksConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[hooks]`: what the agent host's hooks may do here (docs/design/hosts.md)."""

    stop_gate: bool = True
    """Whether a stop waits for current proof of a change in progress."""
    capture: bool = True
    """Whether tool calls the host reports are recorded in the case (docs/design/activity.md)."""


HOOKS_KEYS = ("stop_gate", "capture")


class Config(msgspec.Struct, kw_only=True):
    """The resolved configuration and where each value came from."""

    cases_dir: str | None = None
    """Absolute path of the cases root when configured; None means the central store."""
    redact_literals: tuple[str, ...] = ()
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT
    verifiers: dict[str, VerifierConfig] = msgspec.field(default_factory=dict)
    """Configured command verifiers by name; a later source replaces a whole entry."""
    recall_brief: bool = True
    """Whether `case open` answers with the brief of what earlier cases learned."""
    share: ShareConfig = msgspec.field(default_factory=ShareConfig)
    hooks: HooksConfig = msgspec.field(default_factory=HooksConfig)
    prune_older_than: int = PRUNE_AFTER_DEFAULT
    """Seconds a case that is not closed may stay idle before `case prune` takes it."""
    review_accept: str | None = None
    """`[review] accept` as this workspace's files say; the gate reads the base commit's."""
    sources: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """For each key that is not at its default, the sources that set it."""
    files: list[str] = msgspec.field(default_factory=list)
    """Configuration files that were read."""


def global_config_path(env: Mapping[str, str]) -> str | None:
    """`$XDG_CONFIG_HOME/cortex/config.toml`, else `~/.config/cortex/config.toml`."""
    base = _absolute(env.get("XDG_CONFIG_HOME"))
    if base is None:
        home = _absolute(env.get("HOME"))
        if home is None:
            return None
        base = os.path.join(home, ".config")
    return os.path.join(base, "cortex", "config.toml")


def load_config(repo_root: str, env: Mapping[str, str]) -> Config:
    """Read every source for the workspace rooted at `repo_root` and validate it."""
    config = Config()
    layers: list[tuple[SourceKind, str, dict[str, Any]]] = []
    global_path = global_config_path(env)
    if global_path is not None:
        table = _read_toml(global_path, table_path=None)
        if table is not None:
            layers.append(("global", global_path, table))
    pyproject = os.path.join(repo_root, "pyproject.toml")
    table = _read_toml(pyproject, table_path=("tool", "cortex"))
    if table is not None:
        layers.append(("pyproject", pyproject + " [tool.cortex]", table))
    repo_file = os.path.join(repo_root, "cortex.toml")
    table = _read_toml(repo_file, table_path=None)
    if table is not None:
        layers.append(("repo", repo_file, table))
    for kind, source, values in layers:
        config.files.append(source)
        for key, value in values.items():
            if key not in FILE_KEYS:
                known = ", ".join(FILE_KEYS)
                raise ConfigError(source, key, f"unknown key (known keys: {known})")
            _apply(config, key, value, kind=kind, source=source, repo_root=repo_root, env=env)
    for key, variable in ENV_KEYS.items():
        raw = env.get(variable)
        if raw:
            value = _from_env(key, variable, raw)
            _apply(config, key, value, kind="env", source=variable, repo_root=repo_root, env=env)
    return config


def _read_toml(path: str, *, table_path: tuple[str, ...] | None) -> dict[str, Any] | None:
    try:
        data = read_bounded(path, CONFIG_FILE_MAX)
    except FileNotFoundError:
        return None
    except IntegrityError as exc:
        raise ConfigError(path, None, exc.message) from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot be read ({exc.strerror})") from None
    # A pyproject without the word "cortex" cannot hold [tool.cortex]; skipping the TOML parse
    # keeps it (and the tomllib import) off the per-call path of most repositories.
    if table_path is not None and b"cortex" not in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, None, f"is not valid TOML ({exc})") from None
    document = parse_toml(text, path)
    if table_path is None:
        return document
    value: Any = document
    for part in table_path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if not isinstance(value, dict):
        raise ConfigError(path, ".".join(table_path), "must be a table")
    return value


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """A TOML document, or ConfigError naming `path`; never RecursionError or ValueError.

    Failures are caught here, at the parse boundary, instead of being prevented by a scan
    first: a scan would be a second TOML lexer (strings, multi-line strings, comments), and
    wherever it disagreed with tomllib it would refuse a valid file or pass one that crashes.
    Catching cannot disagree, and cannot crash: tomllib is pure Python, so nesting past the
    recursion limit raises RecursionError and unwinds (no C stack is used up, whatever the
    depth), and tomllib converts integers itself, so one past Python's conversion limit raises
    ValueError. The limit on depth is therefore Python's recursion limit (a few hundred levels).
    """
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"is not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(path, None, "is nested too deeply to be read") from None
    except ValueError as exc:
        raise ConfigError(path, None, _unconvertible(text, exc)) from None


def _unconvertible(text: str, exc: ValueError) -> str:
    """Why tomllib raised a plain ValueError: an integer Python will not convert, and where."""
    import re
    import sys

    limit = sys.get_int_max_str_digits()
    # The first decimal run past the limit (TOML allows `_` between digits): its line, not its
    # key, is what can be told without parsing the file.
    found = re.search(rf"[0-9](?:_?[0-9]){{{limit},}}", text) if limit else None
    if found is None:
        return f"cannot be read ({exc})"
    line = text.count("\n", 0, found.start()) + 1
    return f"holds an integer of more than {limit} digits (line {line}), which Python will not read"


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _from_env(key: str, variable: str, raw: str) -> object:
    if key == "recall_brief":
        word = raw.strip().lower()
        if word not in _TRUE | _FALSE:
            msg = f"must be one of 1, true, yes, on, 0, false, no, off, not {raw!r}"
            raise ConfigError(variable, None, msg)
        return word in _TRUE
    if key == "redact_literals":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if key == "lock_timeout":
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(variable, None, f"must be a number of seconds, not {raw!r}") from None
    return raw


def _apply(
    config: Config,
    key: str,
    value: object,
    *,
    kind: SourceKind,
    source: str,
    repo_root: str,
    env: Mapping[str, str],
) -> None:
    if key == "cases_dir":
        config.cases_dir = _cases_dir(kind, source, value, repo_root, env)
        if ".git" in config.cases_dir.split(os.sep):
            raise ConfigError(source, "cases_dir", "must not be inside a .git directory")
        config.sources[key] = [source]
    elif key == "lock_timeout":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(source, key, "must be a number of seconds")
        if not 0 < value <= LOCK_TIMEOUT_MAX:
            raise ConfigError(source, key, f"must be more than 0 and at most {LOCK_TIMEOUT_MAX:g}")
        config.lock_timeout = float(value)
        config.sources[key] = [source]
    elif key == "recall_brief":
        if not isinstance(value, bool):
            raise ConfigError(source, key, "must be true or false")
        config.recall_brief = value
        config.sources[key] = [source]
    elif key == "prune_older_than":
        config.prune_older_than = duration(value, source, key)
        config.sources[key] = [source]
    elif key == "share":
        config.share = _share(source, value, config.share)
        config.sources.setdefault(key, []).append(source)
    elif key == "hooks":
        config.hooks = _hooks(source, value, config.hooks)
        config.sources.setdefault(key, []).append(source)
    elif key == "review":
        config.review_accept = review_accept(source, value) or config.review_accept
        config.sources.setdefault(key, []).append(source)
    elif key == "verifiers":
        config.verifiers.update(_verifiers(source, value))
        if len(config.verifiers) > CONFIG_VERIFIERS_MAX:
            raise ConfigError(source, key, f"more than {CONFIG_VERIFIERS_MAX} verifiers in total")
        config.sources.setdefault(key, []).append(source)
    else:
        literals = _literals(source, key, value)
        # Literals accumulate across sources: a later source can add secrets, never unlist one.
        merged = tuple(dict.fromkeys((*config.redact_literals, *literals)))
        if len(merged) > REDACT_LITERALS_MAX:
            raise ConfigError(source, key, f"more than {REDACT_LITERALS_MAX} literals in total")
        config.redact_literals = merged
        config.sources.setdefault(key, []).append(source)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: object, source: str, key: str | None) -> int:
    """`90s`, `15m`, `24h`, `7d` (or whole seconds) as seconds, 1 s to a year; else ConfigError."""
    import re

    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and (match := re.fullmatch(r"([0-9]{1,9})([smhd])", value)):
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
    else:
        raise ConfigError(source, key, "must look like 90s, 15m, 24h or 30d")
    if not 1 <= seconds <= STALE_AFTER_MAX:
        raise ConfigError(source, key, f"must be between 1s and {STALE_AFTER_MAX // 86400}d")
    return seconds


def _share(source: str, value: object, current: ShareConfig) -> ShareConfig:
    """`[share]`: a later source overrides the keys it names."""
    import re

    if not isinstance(value, dict):
        raise ConfigError(source, "share", "must be a table: [share] enabled = true")
    unknown = sorted(set(value) - set(SHARE_KEYS))
    if unknown:
        known = ", ".join(SHARE_KEYS)
        raise ConfigError(source, f"share.{unknown[0]}", f"unknown key (known keys: {known})")
    enabled = value.get("enabled", current.enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(source, "share.enabled", "must be true or false")
    remote = value.get("remote", current.remote)
    if not isinstance(remote, str) or not re.fullmatch(
        r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}", remote
    ):
        msg = "must be the name of a git remote (letters, digits, . _ / -; not a URL)"
        raise ConfigError(source, "share.remote", msg)
    return ShareConfig(enabled=enabled, remote=remote)


def _hooks(source: str, value: object, current: HooksConfig) -> HooksConfig:
    """`[hooks]`: a later source overrides the keys it names (a user can turn capture off)."""
    if not isinstance(value, dict):
        raise ConfigError(source, "hooks", "must be a table: [hooks] capture = false")
    unknown = sorted(set(value) - set(HOOKS_KEYS))
    if unknown:
        known = ", ".join(HOOKS_KEYS)
        raise ConfigError(source, f"hooks.{unknown[0]}", f"unknown key (known keys: {known})")
    chosen: dict[str, bool] = {}
    for key in HOOKS_KEYS:
        flag = value.get(key, getattr(current, key))
        if not isinstance(flag, bool):
            raise ConfigError(source, f"hooks.{key}", "must be true or false")
        chosen[key] = flag
    return HooksConfig(**chosen)


def review_accept(source: str, value: object) -> str | None:
    """`[review]`: the level it names (None when it names none)."""
    if not isinstance(value, dict):
        raise ConfigError(source, "review", 'must be a table: [review] accept = "local"')
    unknown = sorted(set(value) - set(REVIEW_KEYS))
    if unknown:
        known = ", ".join(REVIEW_KEYS)
        raise ConfigError(source, f"review.{unknown[0]}", f"unknown key (known keys: {known})")
    accept = value.get("accept")
    if accept is not None and accept not in ACCEPT_LEVELS:
        raise ConfigError(source, "review.accept", f"must be one of {', '.join(ACCEPT_LEVELS)}")
    review_require(source, value)
    return accept


def review_require(source: str, review: dict[str, Any]) -> tuple[str, ...]:
    """`[review] require`: the verifiers (plan requirements) every case's proof must include."""
    value = review.get("require", [])
    if (
        not isinstance(value, list)
        or len(value) > REVIEW_REQUIRE_MAX
        # Each a name a plan can hold: any other could never be included, so every case would
        # be refused with a `plan --verify` that itself is refused.
        or not all(isinstance(item, str) and REQUIREMENT.fullmatch(item) for item in value)
    ):
        msg = (
            f"must be a list of at most {REVIEW_REQUIRE_MAX} verifier names as plan --verify "
            'takes them: ["command:lint"]'
        )
        raise ConfigError(source, "review.require", msg)
    return tuple(dict.fromkeys(value))


class Committed(msgspec.Struct, kw_only=True, frozen=True):
    """What a commit's own configuration files say about verifiers and the gate."""

    verifiers: dict[str, VerifierConfig]
    accept: str | None
    require: tuple[str, ...] = ()
    """`[review] require`: what every case's plan must include for the gate to approve it."""


def committed(files: Mapping[str, bytes | None], label: str) -> Committed:
    """The `verifiers` and `[review]` of a commit's `pyproject.toml` and `cortex.toml`.

    `files` maps each file name to its bytes at the commit (None: absent). Only these two keys
    are read (the others describe a machine, not the commit); a file that does not parse is a
    ConfigError naming `label:file`.
    """
    verifiers: dict[str, VerifierConfig] = {}
    accept: str | None = None
    require: tuple[str, ...] = ()
    for name, table_path in (("pyproject.toml", ("tool", "cortex")), ("cortex.toml", None)):
        data = files.get(name)
        if data is None or (table_path is not None and b"cortex" not in data):
            continue
        source = f"{label}:{name}"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(source, None, f"is not valid TOML ({exc})") from None
        table: Any = parse_toml(text, source)
        for part in table_path or ():
            table = table.get(part) if isinstance(table, dict) else None
        if not isinstance(table, dict):
            continue
        if "verifiers" in table:
            verifiers.update(_verifiers(source, table["verifiers"]))
        if "review" in table:
            accept = review_accept(source, table["review"]) or accept
            require = (*require, *review_require(source, table["review"]))
    return Committed(verifiers=verifiers, accept=accept, require=tuple(dict.fromkeys(require)))


def global_review_require(env: Mapping[str, str]) -> tuple[str, ...]:
    """`[review] require` of the global configuration file: what this machine's gate adds."""
    path = global_config_path(env)
    table = None if path is None else _read_toml(path, table_path=None)
    if path is None or table is None or not isinstance(table.get("review"), dict):
        return ()
    return review_require(path, table["review"])


def global_review_accept(env: Mapping[str, str]) -> str | None:
    """`[review] accept` of the global configuration file, if it says."""
    path = global_config_path(env)
    table = None if path is None else _read_toml(path, table_path=None)
    if table is None or "review" not in table:
        return None
    assert path is not None  # noqa: S101 - a table was read from it
    return review_accept(path, table["review"])


def _verifiers(source: str, value: object) -> dict[str, VerifierConfig]:
    import re

    if not isinstance(value, dict):
        raise ConfigError(source, "verifiers", "must be a table of [verifiers.NAME] tables")
    found: dict[str, VerifierConfig] = {}
    for name, table in value.items():
        key = f"verifiers.{name}"
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", name):
            raise ConfigError(source, key, "a verifier name is letters, digits, . _ - (<=128)")
        if not isinstance(table, dict):
            raise ConfigError(source, key, "must be a table with argv (and timeout, kind)")
        unknown = sorted(set(table) - set(VERIFIER_KEYS))
        if unknown:
            known = ", ".join(VERIFIER_KEYS)
            raise ConfigError(source, f"{key}.{unknown[0]}", f"unknown key (known keys: {known})")
        argv = table.get("argv")
        if (
            not isinstance(argv, list)
            or not argv
            or len(argv) > ARGV_MAX
            or not all(isinstance(a, str) for a in argv)
        ):
            msg = f"must be a list of 1 to {ARGV_MAX} strings (no shell: one string per argument)"
            raise ConfigError(source, f"{key}.argv", msg)
        for item in argv:
            if "\0" in item or len(item.encode("utf-8", "surrogatepass")) > ARGV_ITEM_MAX:
                msg = f"arguments must be at most {ARGV_ITEM_MAX} bytes, without NUL"
                raise ConfigError(source, f"{key}.argv", msg)
        if not argv[0]:
            raise ConfigError(source, f"{key}.argv", "the program (first item) cannot be empty")
        timeout = table.get("timeout", VERIFIER_TIMEOUT_DEFAULT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ConfigError(source, f"{key}.timeout", "must be a number of seconds")
        if not 0 < timeout <= VERIFIER_TIMEOUT_MAX:
            limit = f"{VERIFIER_TIMEOUT_MAX:g}"
            raise ConfigError(source, f"{key}.timeout", f"must be more than 0 and at most {limit}")
        kind = table.get("kind", "unit_test")
        if kind not in VERIFIER_KINDS:
            raise ConfigError(source, f"{key}.kind", f"must be one of {', '.join(VERIFIER_KINDS)}")
        found[name] = VerifierConfig(
            argv=tuple(argv), timeout=float(timeout), kind=kind, source=source
        )
    return found


def _literals(source: str, key: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(source, key, "must be a list of strings")
    for literal in value:
        size = len(literal.encode("utf-8", "surrogatepass"))
        if not REDACT_LITERAL_MIN <= size <= REDACT_LITERAL_MAX:
            msg = (
                f"each literal must be {REDACT_LITERAL_MIN} to {REDACT_LITERAL_MAX} bytes "
                "(shorter ones would mangle ordinary text)"
            )
            raise ConfigError(source, key, msg)
    return list(value)


def _cases_dir(
    kind: SourceKind, source: str, value: object, repo_root: str, env: Mapping[str, str]
) -> str:
    if not isinstance(value, str) or not value or "\0" in value or len(value) > 4096:
        raise ConfigError(source, "cases_dir", "must be a non-empty path")
    if kind == "env":
        if not os.path.isabs(value):
            raise ConfigError(source, None, "must be an absolute path")
        return os.path.normpath(value)
    if kind == "global":
        if value == "~" or value.startswith("~/"):
            home = _absolute(env.get("HOME"))
            if home is None:
                raise ConfigError(source, "cases_dir", "uses ~ but HOME is not set")
            return os.path.normpath(os.path.join(home, value[2:]))
        if os.path.isabs(value):
            return os.path.normpath(value)
    elif os.path.isabs(value) or value.startswith("~"):
        # A repository must not be able to aim our writes outside itself.
        raise ConfigError(source, "cases_dir", "must be relative to the repository in a repo file")
    joined = os.path.normpath(os.path.join(repo_root, value))
    if joined == repo_root:
        raise ConfigError(source, "cases_dir", "cannot be the repository root itself")
    if not joined.startswith(repo_root.rstrip(os.sep) + os.sep):
        raise ConfigError(source, "cases_dir", "must stay inside the repository")
    return joined


def _absolute(value: str | None) -> str | None:
    """An environment path, or None when unset, empty or relative (as XDG prescribes)."""
    if value and os.path.isabs(value):
        return value
    return None


def state_root(env: Mapping[str, str]) -> str:
    """`CORTEX_STATE_DIR`, else `$XDG_STATE_HOME/cortex`, else `~/.local/state/cortex`."""
    found = state_dir(env)
    if found is not None:
        return found
    if env.get("CORTEX_STATE_DIR"):
        raise ConfigError("CORTEX_STATE_DIR", None, "must be an absolute path")
    raise ConfigError("HOME", None, "is not set; set CORTEX_STATE_DIR or XDG_STATE_HOME")


def cache_root(env: Mapping[str, str]) -> str:
    """`CORTEX_CACHE_DIR`, else `$XDG_CACHE_HOME/cortex`, else `~/.cache/cortex`.

    Only derived, disposable files live there (the recall index): deleting it loses nothing.
    """
    explicit = env.get("CORTEX_CACHE_DIR")
    if explicit:
        if not os.path.isabs(explicit):
            raise ConfigError("CORTEX_CACHE_DIR", None, "must be an absolute path")
        return os.path.normpath(explicit)
    xdg = _absolute(env.get("XDG_CACHE_HOME"))
    if xdg is not None:
        return os.path.join(xdg, "cortex")
    home = _absolute(env.get("HOME"))
    if home is None:
        raise ConfigError("HOME", None, "is not set; set CORTEX_CACHE_DIR or XDG_CACHE_HOME")
    return os.path.join(home, ".cache", "cortex")
