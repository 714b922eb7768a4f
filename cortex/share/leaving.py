"""What leaves with a replica, checked: the export's context, the detect pass, the snapshots.

Every export (`cortex.share.export`) and the fencing of a fetch (`cortex.share.merge`) read a
case through one `Context` and check what would leave with one `Checker`: a string that looks
like a secret is noted by the id of the record that holds it, a path of this machine as a leak.
`leaving_snapshots` gives each auxiliary snapshot as it leaves (projected, its plan digest
carried into the batches that name it). docs/design/sharing.md, "Sharing".
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from cortex.cases import scrub
from cortex.cases.bounds import SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import AUX_TYPES, Verification
from cortex.cases.errors import BusyError
from cortex.cases.fsio import read_bounded
from cortex.cases.layout import BACKUP_PREFIX
from cortex.cases.records import CaseFile, encode_pretty
from cortex.cases.redact import Redactor
from cortex.cases.replica_index import ReplicaIndex
from cortex.cases.store import CaseStore
from cortex.share import project
from cortex.share.format import Head
from cortex.share.project import PathMap


class Context(msgspec.Struct, kw_only=True):
    """Everything an export reads besides the case itself."""

    store: CaseStore
    case: CaseFile
    index: ReplicaIndex | None
    replica: str
    paths: PathMap
    redactor: Redactor
    ruleset: str
    version: str
    now: str


class Checker:
    """Collects what the detect pass finds, as ids only."""

    def __init__(self, redactor: Redactor, paths: PathMap) -> None:
        self.redactor = redactor
        self.paths = paths
        self.hits: list[str] = []
        self.leaks: list[str] = []

    def strings(self, value: Any, label: str) -> None:
        """Note `label` once if any string of `value` looks like a secret."""
        for text in scrub.strings(value):
            if self.redactor.looks_secret(text):
                self._hit(label)
                return

    def data(self, data: bytes, label: str) -> None:
        """Note `label` if `data` looks like a secret, or names a path of this machine."""
        if self.redactor.looks_secret(data.decode("utf-8", "surrogateescape")):
            self._hit(label)
        if self.paths.present(data):
            self.leaks.append(label)

    def _hit(self, label: str) -> None:
        if label not in self.hits:
            self.hits.append(label)


def _snapshot_bytes(path: str, name: str, sha: str) -> bytes:
    """The stored bytes of a snapshot version (the file, or its backup mid-commit)."""
    for candidate in (name, BACKUP_PREFIX + name):
        try:
            data = read_bounded(os.path.join(path, candidate), SNAPSHOT_MAX)
        except FileNotFoundError:
            continue
        if sha256_hex(data) == sha:
            return data
    msg = f"{name} changed while it was being exported; retry"
    raise BusyError(msg)


def leaving_snapshots(
    context: Context, path: str, check: Checker, before: Head | None = None
) -> tuple[dict[str, str], dict[str, bytes]]:
    """Each auxiliary snapshot as it leaves (replicas.json stays: it is this machine's)."""
    shas: dict[str, str] = {}
    files: dict[str, bytes] = {}
    stored: dict[str, bytes] = {}
    for stem, version in sorted(context.case.snapshots.items()):
        name = f"{stem}.json"
        if name not in AUX_TYPES:
            continue
        stored[name] = _snapshot_bytes(path, name, version.sha256)
    plan_shared = None
    for name, data in stored.items():
        shared = project.project_document(data, AUX_TYPES[name], context.paths)
        if name == "plan.json":
            plan_shared = sha256_hex(shared)
        files[name] = shared
    if "verification.json" in files and "plan.json" in stored and plan_shared is not None:
        local_plan = sha256_hex(stored["plan.json"])
        if local_plan != plan_shared:
            # The plan's bytes changed on the way out: batches must name the plan as it left.
            document = msgspec.json.decode(files["verification.json"], type=Verification)
            for batch in document.batches:
                if batch.plan_sha256 == local_plan:
                    batch.plan_sha256 = plan_shared
            files["verification.json"] = encode_pretty(document)
    for name, data in files.items():
        shas[name] = sha256_hex(data)
        if context.paths.present(data):
            check.leaks.append(name)
        if before is not None and before.snapshots.get(name) == shas[name]:
            continue  # shared before, checked under the same rules then
        decoded = msgspec.json.decode(data, type=AUX_TYPES[name])
        for label, item in _items(name, decoded):
            check.strings(msgspec.to_builtins(item), label)
    return shas, files


def _items(name: str, document: msgspec.Struct) -> list[tuple[str, Any]]:
    """The parts of a snapshot a refusal names (decision, hypothesis, batch, receipt ids).

    The lists of items are scanned item by item; whatever else the document holds is scanned
    once, under the snapshot's name (a plan, under its evidence record's id).
    """
    items: list[tuple[str, Any]] = []
    rest = msgspec.to_builtins(document)
    for attribute in ("decisions", "hypotheses", "batches", "receipts"):
        values = getattr(document, attribute, None)
        if not isinstance(values, list) or not values or not isinstance(values[0], msgspec.Struct):
            continue
        items.extend((str(getattr(item, "id", name)), item) for item in values)
        rest.pop(attribute, None)
    label = getattr(document, "evidence_id", None) if name == "plan.json" else None
    items.append((str(label or name), rest))
    return items
