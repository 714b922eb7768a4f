"""The per-machine opt-in for unattended answers: automation a person configured to answer.

Decisions are a person's to answer (docs/design/trust.md, "Answers need a person present").
Where automation genuinely stands for a person (a CI job a person set up), that person opts the
machine in with `unattended-answers.toml` in their configuration directory, next to the command
grants (`cortex.kernel.grants`), which no repository file can reach:

    stands_for = "the nightly release job, configured by alice"

It is read from there only: never from a repository, a `cortex.toml`, a `pyproject.toml` or the
environment, so a repository cannot approve itself. The file must be a regular file of the
user's, writable by no one else; anything wrong with it fails closed (`config_error`), never as
consent.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from cortex.cases.bounds import CONFIG_FILE_MAX
from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import read_bounded
from cortex.kernel.config import global_config_path, parse_toml
from cortex.kernel.errors import ConfigError

FILE = "unattended-answers.toml"
KEY = "stands_for"
STATEMENT_MAX = 200
"""The longest `stands_for`, in characters: one line saying whom the automation answers for."""


def opt_in_path(env: Mapping[str, str]) -> str | None:
    """`$XDG_CONFIG_HOME/cortex/unattended-answers.toml` (else under ~/.config), or None."""
    config = global_config_path(env)
    return None if config is None else os.path.join(os.path.dirname(config), FILE)


def stands_for(env: Mapping[str, str]) -> str | None:
    """Whom this machine's opt-in says unattended answers stand for; None without one."""
    path = opt_in_path(env)
    if path is None:
        return None
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(path, None, "must be a regular file (not a link or a directory)")
    if info.st_mode & 0o022 or info.st_uid != os.getuid():
        msg = "must be yours and writable by you alone (chmod 600); it is not consent otherwise"
        raise ConfigError(path, None, msg)
    try:
        data = read_bounded(path, CONFIG_FILE_MAX)
    except IntegrityError as exc:
        raise ConfigError(path, None, exc.message) from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot be read ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(path, None, "is not valid UTF-8") from None
    document = parse_toml(text, path)
    unknown = sorted(set(document) - {KEY})
    if unknown:
        raise ConfigError(path, unknown[0], f"is not a key of this file (only {KEY})")
    value = document.get(KEY)
    if not isinstance(value, str) or not value.strip():
        msg = "must say, as text, whom unattended answers stand for"
        raise ConfigError(path, KEY, msg)
    statement = " ".join(value.split())
    if len(statement) > STATEMENT_MAX or any(ord(ch) < 32 or ord(ch) == 127 for ch in statement):
        msg = f"must be one line of at most {STATEMENT_MAX} printable characters"
        raise ConfigError(path, KEY, msg)
    return statement
