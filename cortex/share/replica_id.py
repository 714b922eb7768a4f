"""This state root's replica id: `<state root>/replica.json`, and the key that never leaves it.

Every export names the replica it comes from (docs/design/sharing.md, replicas). The id is
minted the first time a command needs one and kept with a key that keys the ruleset digest in
each head (`ruleset_digest`), so a head says nothing about the rules it was checked against.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from cortex.cases.digest import sha256_hex
from cortex.cases.errors import BusyError, IntegrityError
from cortex.cases.fsio import make_private_dirs, read_bounded, write_once
from cortex.cases.ids import is_id, new_id

if TYPE_CHECKING:
    from cortex.share.project import PathMap

REPLICA_FILE = "replica.json"


class ReplicaFile(msgspec.Struct, kw_only=True):
    """`<state root>/replica.json`: this state root's replica id, and a key that never leaves."""

    id: str
    key: str
    """Keys the ruleset digest in each head, so a head says nothing about the rules."""


def load(state_root: str, *, create: bool) -> ReplicaFile:
    """This state root's replica id (minted and kept the first time one is needed)."""
    path = os.path.join(state_root, REPLICA_FILE)
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return ReplicaFile(id=new_id("rep"), key=os.urandom(32).hex())
    make_private_dirs(state_root)
    fresh = ReplicaFile(id=new_id("rep"), key=os.urandom(32).hex())
    write_once(path, msgspec.json.encode(fresh) + b"\n", mode=0o600)
    return _read(path)  # a concurrent first writer may have won


def keep(state_root: str, rep: ReplicaFile) -> None:
    """Keep `rep` as this state root's replica id, right before the first commit that needs it.

    A fetch plans with a replica id it has not written yet, so a refused fetch leaves no
    `replica.json` behind; a concurrent first writer that kept another id wins, and this call
    is refused as busy (retry: the next plan uses the kept id).
    """
    path = os.path.join(state_root, REPLICA_FILE)
    if not os.path.lexists(path):
        make_private_dirs(state_root)
        write_once(path, msgspec.json.encode(rep) + b"\n", mode=0o600)
    if _read(path).id != rep.id:
        raise BusyError("another command kept this machine's replica id first; fetch again")


def _read(path: str) -> ReplicaFile:
    data = read_bounded(path, 4096)
    try:
        found = msgspec.json.decode(data, type=ReplicaFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: not a replica file ({exc})", path=path) from None
    if not is_id(found.id, "rep") or len(found.key) != 64:
        raise IntegrityError(f"{path}: not a replica file", path=path)
    return found


def ruleset_digest(key: str, version: str, literals: Iterable[str], paths: PathMap) -> str:
    """A keyed digest of what checks an export: the version, the literals, the path map."""
    material = msgspec.json.encode([version, sorted(literals), paths.paths])
    return hmac_sha256(bytes.fromhex(key), material)


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) on the store's sha256, without loading OpenSSL for `hmac`."""
    block = 64
    if len(key) > block:
        key = bytes.fromhex(sha256_hex(key))
    key = key.ljust(block, b"\0")
    inner = bytes.fromhex(sha256_hex(bytes(k ^ 0x36 for k in key) + message))
    return sha256_hex(bytes(k ^ 0x5C for k in key) + inner)
