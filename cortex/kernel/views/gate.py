"""What the merge gate checks beside the assessment: integrity, provenance, policy, definitions.

docs/design/report.md, "The merge gate", and docs/design/trust.md, "The merge gate": a case
is audited before it is judged; the origin of its proof is read from the ledgers (which
replica's commands ledger holds the `case.verify` line that committed the latest batch); the
policy level decides which origins count; and every verifier a case requires is compared
between the base commit's definition, the head commit's and the one its receipts ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex.cases.bounds import CONFIG_FILE_MAX
from cortex.kernel.config import ACCEPT_LEVELS, Committed, committed, global_review_accept
from cortex.kernel.envelope import Data
from cortex.kernel.errors import ArgumentError
from cortex.verifiers.config import definition_digest

if TYPE_CHECKING:
    from cortex.cases.documents import Verification
    from cortex.cases.records import CaseFile
    from cortex.cases.replica_index import ReplicaIndex
    from cortex.cases.store import CaseStore
    from cortex.kernel.kernel import Kernel

CONFIG_FILES = ("pyproject.toml", "cortex.toml")
RANK = {level: rank for rank, level in enumerate(ACCEPT_LEVELS)}
ORIGIN_LEVEL = {"local": "local", "remote": "remote", "bundle": "any"}
"""The least trusting level that accepts proof of each origin (`unknown`: none but a rerun)."""


def config_at(kernel: Kernel, commit: str, label: str) -> Committed:
    """The verifier definitions and `[review]` of a commit's own configuration files."""
    from cortex.workspace import history

    files = history.files_at(
        kernel.workspace.root, kernel.env, commit, CONFIG_FILES, CONFIG_FILE_MAX
    )
    return committed(files, f"{label} {commit[:12]}")


def policy(kernel: Kernel, accept: str | None, *, reproduce: bool, base: Committed) -> Data:
    """The level the gate applies and where it was set (`flag`, `base`, `global`, `default`)."""
    if reproduce:
        return {"accept": "reproduced", "from": "flag"}
    if accept is not None:
        if accept not in ACCEPT_LEVELS:
            msg = f"{{accept}} must be one of {', '.join(ACCEPT_LEVELS)}, not {accept[:40]!r}"
            raise ArgumentError(msg, "accept")
        return {"accept": accept, "from": "flag"}
    if base.accept is not None:
        return {"accept": base.accept, "from": "base"}
    found = global_review_accept(kernel.env)
    if found is not None:
        return {"accept": found, "from": "global"}
    return {"accept": "local", "from": "default"}


def audit_problem(kernel: Kernel, store: CaseStore, task_id: str) -> Data | None:
    """The `integrity` problem of a case `audit` refuses (None when it passes)."""
    from cortex.cases.integrity import audit_case

    report = audit_case(store.case_path(task_id), task_id, kernel.redactor)
    if report.ok:
        return None
    first = report.errors[0]
    where = f" ({first.file})" if first.file else ""
    return {
        "code": "integrity",
        "message": (
            f"the case fails its audit ({len(report.errors)} error(s); first: {first.message}"
            f"{where}); nothing it records can be trusted: run cortex case audit {task_id}"
        ),
    }


def provenance(
    store: CaseStore, case: CaseFile, verification: Verification | None, index: ReplicaIndex | None
) -> Data:
    """Where the latest batch was committed: this machine, a remote's replica, a bundle.

    `local` needs this machine's own `case.verify` line for the batch and no adoption of
    another replica's state after it: an adopted verification.json may reuse a local batch's
    id with other content. Otherwise the proof is the replica's whose state is in force (what
    this machine holds came from there), provided some ledger holds the batch's verify line.
    """
    from cortex.cases.records import Command

    found: Data = {
        "origin": None,
        "batch": None,
        "replica": None,
        "source": None,
        "commit": None,
        "fetchedAt": None,
        "reproduced": False,
    }
    if verification is None or not verification.batches:
        return found
    batch = verification.batches[-1].id
    found.update(batch=batch, origin="unknown")
    local = adopted = False
    holder: str | None = None
    for record, origin in store.read_ledger_with_origin(case, "commands"):
        if not isinstance(record, Command):
            continue
        verified = record.operation == "case.verify" and record.target == batch
        if origin is None and verified:
            local, adopted = True, False
        elif origin is None and record.operation == "case.fetch":
            adopted = adopted or "adopted the state" in (record.note or "")
        elif verified and holder is None:
            holder = origin
    if local and not adopted:
        found["origin"] = "local"
        return found
    key = holder
    if index is not None and index.in_force and index.in_force != index.local.replica:
        key = index.in_force  # what this machine holds came from the replica in force
    replica = index.replica(key) if index is not None and key else None
    if replica is None or not (local or holder is not None):
        return found
    found.update(
        origin="bundle" if replica.source.startswith("bundle:") else "remote",
        replica=replica.key,
        source=replica.source,
        commit=replica.commit,
        fetchedAt=replica.fetched_at,
    )
    return found


def untrusted(found: Data, level: str) -> Data | None:
    """The `untrusted_proof` problem when the level does not accept the proof's origin."""
    origin = found["origin"]
    if origin is None or level == "reproduced":
        return None
    needed = ORIGIN_LEVEL.get(origin)
    if needed is not None and RANK[needed] <= RANK[level]:
        return None
    where = {
        "remote": f"a replica ({found['replica']}) fetched from {found['source']}",
        "bundle": f"a replica ({found['replica']}) read from {found['source']}",
        "local": "a verify on this machine",
        "unknown": "no ledger this store holds (no case.verify line committed it)",
    }[origin]
    accept = f"--accept {needed}, or " if needed is not None else ""
    return {
        "code": "untrusted_proof",
        "message": (
            f"the proof comes from {where}, which the level {level!r} does not accept: "
            f"{accept}review --reproduce to run it again"
        ),
    }


def redefined(requirements: list[str], base: Committed, head: Committed) -> list[Data]:
    """Each required verifier whose definition differs between the base and head commits."""
    found = []
    for requirement in sorted(set(requirements)):
        before = definition_digest(requirement, base.verifiers)
        after = definition_digest(requirement, head.verifiers)
        if before != after:
            found.append({"requirement": requirement, "base": before, "head": after})
    return found


def receipt_definitions(
    verification: Verification | None, base: Committed
) -> tuple[list[str], int]:
    """The latest batch's runs whose recorded definition is not the base's; and those unknown."""
    if verification is None or not verification.batches:
        return [], 0
    batch = verification.batches[-1].id
    differ: list[str] = []
    unknown = 0
    for receipt in verification.receipts:
        if (
            receipt.batch_id != batch
            or receipt.purpose != "verifier_run"
            or not receipt.requirement
        ):
            continue
        if receipt.verifier_sha256 is None:
            unknown += 1
        elif receipt.verifier_sha256 != definition_digest(receipt.requirement, base.verifiers):
            differ.append(receipt.requirement)
    return sorted(set(differ)), unknown


FILES_SHOWN = 5
"""How many changed files a warning about a verifier's own files names."""


def own_files(requirements: list[str], base: Committed, changed: list[str]) -> list[str]:
    """A warning for each required verifier whose command names files the range changed.

    The base's definition is an argv; a path in it (`check.py`, `tests/`) is the branch's file
    in the checkout, so a branch that weakens it passes the base's definition as edited
    (docs/design/trust.md, "The merge gate"). The verdict names those files for the reviewer.
    """
    from cortex.verifiers.config import config_key

    changed_set = set(changed)
    warnings = []
    for requirement in sorted(set(requirements)):
        key = config_key(requirement)
        config = base.verifiers.get(key) if key is not None else None
        hits: list[str] = []
        if requirement.partition(":")[0] == "pytest":
            # pytest reads its configuration, every conftest.py, and (without a table) the
            # interpreter of a committed virtualenv: all of them the branch's files.
            hits += [p for p in changed if _pytest_reads(p)]
        for arg in config.argv if config is not None else ():
            path = _relative(arg.rpartition("=")[2] if arg.startswith("-") else arg)
            if path is None:
                continue
            if path in changed_set:
                hits.append(path)
            else:
                hits += [p for p in changed if p.startswith(path.rstrip("/") + "/")]
        hits = sorted(set(hits))
        if hits:
            shown = ", ".join(hits[:FILES_SHOWN])
            more = f" and {len(hits) - FILES_SHOWN} more" if len(hits) > FILES_SHOWN else ""
            warnings.append(
                f"{requirement} runs files this range changes ({shown}{more}): its base "
                "definition ran them as the head commit has them; read those changes"
            )
    return warnings


PYTEST_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")


def _pytest_reads(path: str) -> bool:
    """Whether pytest's run depends on this file of the tree beyond the tests it runs."""
    name = path.rpartition("/")[2]
    return path in PYTEST_FILES or name == "conftest.py" or path.startswith((".venv/", "venv/"))


def _relative(arg: str) -> str | None:
    """`arg` as a path inside the tree (`./a/../b.py` -> `b.py`), or None when it is not one."""
    import posixpath

    if not arg or arg.startswith("/") or "\0" in arg:
        return None
    path = posixpath.normpath(arg)
    if path in {".", ".."} or path.startswith("../"):
        return None
    return path
