"""The per-machine opt-in for unattended answers: automation a person configured to answer.

Decisions are a person's to answer (docs/design/trust.md, "Answers need a person present").
Where automation genuinely stands for a person (a CI job a person set up), that person opts the
machine in with `unattended-answers.toml` in their configuration directory, next to the command
grants (`cortex.kernel.proof.grants`), which no repository file can reach:

    stands_for = "the nightly release job, configured by alice"

It is read from there only: never from a repository, a `cortex.toml`, a `pyproject.toml` or the
environment, so a repository cannot approve itself. The environment only says where the
user's configuration directory is (`XDG_CONFIG_HOME`, `HOME`), and an agent chooses its own
environment: so a file that lies (its directory resolved through links) inside a git work tree
is never consent either, whichever variable led there. The user's home directory is the one
exception (a home kept in git for its dotfiles), found in the password database, not `$HOME`.
The file must be a regular file of the user's, writable by no one else, with no other hard link;
anything wrong with it fails closed (`config_error`), never as consent.
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


def _home() -> str | None:
    """The user's home directory as the password database has it (not `$HOME`)."""
    import pwd

    try:
        return os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None


def _work_tree_holding(directory: str) -> str | None:
    """The git work tree `directory` (resolved) lies in, if any, short of the user's home."""
    here = os.path.realpath(directory)
    home = _home()
    while True:
        if here == home:
            return None  # a home directory kept in git (dotfiles) is still the user's own
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


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
    if info.st_mode & 0o022 or info.st_uid != os.getuid() or info.st_nlink != 1:
        msg = (
            "must be yours, writable by you alone (chmod 600) and have no other hard link; "
            "it is not consent otherwise"
        )
        raise ConfigError(path, None, msg)
    tree = _work_tree_holding(os.path.dirname(path))
    if tree is not None:
        msg = (
            f"lies inside the git repository {tree}; a repository never opts a machine in "
            "(keep the file in your own configuration directory, outside any repository)"
        )
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
