"""Case-store helpers shared by the in-process store tests: a store, a case, a record."""

from __future__ import annotations

from pathlib import Path

import msgspec

from cortex.cases import ids
from cortex.cases.records import CaseFile, Criterion, Evidence, Source, Workspace
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore


def now() -> str:
    return "2026-11-30T12:00:00.000Z"


def make_store(tmp_path: Path, literals: tuple[str, ...] = ()) -> CaseStore:
    return CaseStore(
        str(tmp_path / "store"), redactor=Redactor(literals), lock_timeout=2.0, now=now
    )


def new_case(goal: str = "goal", criteria: list[Criterion] | None = None) -> CaseFile:
    return CaseFile(
        revision=1,
        id=ids.new_id("task"),
        created_at=now(),
        updated_at=now(),
        goal=goal,
        actor="tester",
        workspace=Workspace(kind="directory", root="/srv/w", repository="w"),
        acceptance_criteria=criteria or [],
    )


def evidence(claim: str = "claim") -> Evidence:
    return Evidence(id=ids.new_id("ev"), timestamp=now(), source=Source(tool="t"), claim=claim)


class Plan(msgspec.Struct, kw_only=True, rename="camel"):
    """A stand-in auxiliary snapshot for exercising multi-file commits."""

    schema_version: int = 1
    revision: int = 0
    summary: str
