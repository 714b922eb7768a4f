"""Approval of command verifiers: the environment of the launcher, or a person's grant.

A grant names (workspace root, verifier name, sha256 of the argv joined by NUL) and lives in the
user's configuration directory, which no repository file can reach: a repository that changes
its argv needs a new grant, and a repository can never approve itself
(docs/design/verification.md §2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import msgspec

from cortex.cases.bounds import GRANTS_FILE_MAX, GRANTS_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.fsio import make_private_dirs, read_bounded, write_atomic
from cortex.kernel.config import global_config_path
from cortex.kernel.errors import ConfigError

APPROVE_VARIABLE = "CORTEX_APPROVE_COMMANDS"
_YES = frozenset({"1", "true", "yes", "on"})


class Grant(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """One person's approval of one command in one workspace."""

    workspace: str
    name: str
    argv_sha256: str
    granted_at: str
    argv: list[str] = msgspec.field(default_factory=list)
    """The command as it was approved, for a person reading the file."""


class Grants(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """`command-grants.json`."""

    schema_version: int = 1
    grants: list[Grant] = msgspec.field(default_factory=list)


def argv_digest(argv: Sequence[str]) -> str:
    """sha256 of the arguments joined by NUL (no argument can contain NUL)."""
    return sha256_hex("\0".join(argv).encode("utf-8", "surrogatepass"))


def env_approves(env: Mapping[str, str]) -> bool:
    """Whether the launcher's environment approves every configured command."""
    return env.get(APPROVE_VARIABLE, "").strip().lower() in _YES


def grants_path(env: Mapping[str, str]) -> str | None:
    """Next to the global config file: `$XDG_CONFIG_HOME/cortex/command-grants.json`."""
    config = global_config_path(env)
    return None if config is None else os.path.join(os.path.dirname(config), "command-grants.json")


def load(env: Mapping[str, str]) -> Grants:
    """The grants file, or no grants; a corrupt file fails closed, never as approval.

    It raises ConfigError: `config` answers exit 4 and `doctor` reports a failed check; during
    verify the error blocks the command verifier that asked (its receipt says why).
    """
    path = grants_path(env)
    if path is None:
        return Grants()
    try:
        data = read_bounded(path, GRANTS_FILE_MAX)
    except FileNotFoundError:
        return Grants()
    except IntegrityError as exc:
        raise ConfigError(path, None, exc.message) from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot be read ({exc.strerror})") from None
    try:
        return msgspec.json.decode(data, type=Grants)
    except msgspec.DecodeError as exc:
        raise ConfigError(path, None, f"is not a valid grants file ({exc})") from None


def granted(grants: Grants, workspace: str, name: str, argv: Sequence[str]) -> bool:
    """Whether a grant covers exactly this workspace, name and argv."""
    digest = argv_digest(argv)
    return any(
        g.workspace == workspace and g.name == name and g.argv_sha256 == digest
        for g in grants.grants
    )


def save_grant(
    env: Mapping[str, str], workspace: str, name: str, argv: Sequence[str], now: str
) -> tuple[str, bool]:
    """Add a grant (idempotent); returns the file and whether it changed."""
    path = grants_path(env)
    if path is None:
        msg = "no configuration directory: set XDG_CONFIG_HOME or HOME"
        raise InvalidInputError(msg)
    grants = load(env)
    if granted(grants, workspace, name, argv):
        return path, False
    # One grant per (workspace, name): approving a new argv replaces the old approval.
    kept = [g for g in grants.grants if (g.workspace, g.name) != (workspace, name)]
    if len(kept) >= GRANTS_MAX:
        raise InvalidInputError(f"{path} already holds {GRANTS_MAX} grants; remove some first")
    kept.append(
        Grant(
            workspace=workspace,
            name=name,
            argv_sha256=argv_digest(argv),
            granted_at=now,
            argv=list(argv),
        )
    )
    _write(path, Grants(grants=kept))
    return path, True


def revoke(env: Mapping[str, str], workspace: str, name: str) -> tuple[str | None, bool]:
    """Remove the grant for (workspace, name); returns the file and whether it changed."""
    path = grants_path(env)
    if path is None:
        return None, False
    grants = load(env)
    kept = [g for g in grants.grants if (g.workspace, g.name) != (workspace, name)]
    if len(kept) == len(grants.grants):
        return path, False
    _write(path, Grants(grants=kept))
    return path, True


def _write(path: str, grants: Grants) -> None:
    make_private_dirs(os.path.dirname(path))
    data = msgspec.json.format(msgspec.json.encode(grants), indent=2) + b"\n"
    write_atomic(path, data)
