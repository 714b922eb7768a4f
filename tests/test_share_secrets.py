"""Nothing secret leaves: the export re-runs redaction in detect mode over every byte it sends.

The write boundary already removes every secret it knows (tests/test_secret_corpus.py), so a
secret can only be in a case if it got past it: a file written around the store, an older
ruleset, a literal configured after the fact. This test plants the corpus's seeded shapes that
way, in ledgers (claims, notes), in names (tool and actor names, file locations), in blobs and
in a snapshot, then shares: the share is refused naming record ids only, and not one object
holding a secret exists anywhere, locally or on the remote. Marked sensitive, or in a blob over
the share bound, the same secrets travel as stubs and the remote's every object is clean.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import case_path, git
from secret_kit import CORPUS, Entry, needles_in
from share_kit import Machine, every_object, make_machine, make_remote, remote_refs

from cortex.cases.bounds import SHARE_BLOB_MAX
from cortex.cases.documents import Decision, DecisionOption, Decisions
from cortex.cases.ids import new_id
from cortex.cases.records import Command, Evidence, Location, Source
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore


class Blind(Redactor):
    """A redactor that sees nothing: how text got past the boundary in this test."""

    def __call__(self, text: str) -> str:
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        return data


SHAPES = [
    e
    for e in CORPUS.entries
    if not e.kind.startswith("literal") and Redactor().looks_secret(e.text)
]
PLACES = ("claim", "tool", "actor", "file", "blob", "question", "command")


def test_the_corpus_has_enough_shapes() -> None:
    assert len(SHAPES) >= 50, len(SHAPES)


def _store(machine: Machine, task: str) -> CaseStore:
    return CaseStore(
        str(case_path(machine.env, task).parent),
        redactor=Blind(),
        lock_timeout=10,
        now=lambda: "2030-01-01T00:00:00.000Z",
    )


def _plant(machine: Machine, task: str, shapes: list[Entry], *, sensitive: bool) -> list[str]:
    """Write `shapes` into the case around the redaction boundary; return the records' ids."""
    store = _store(machine, task)
    ids: list[str] = []
    places = itertools.cycle(
        PLACES if not sensitive else ("claim", "tool", "actor", "file", "blob")
    )
    decisions: list[Decision] = []
    with store.transaction(task, actor="planter", operation="test.plant") as txn:
        for entry in shapes:
            place = next(places)
            text = entry.text
            record = Evidence(
                id=new_id("ev"),
                timestamp="2030-01-01T00:00:00.000Z",
                source=Source(tool="pytest"),
                claim="planted",
                sensitivity="sensitive" if sensitive else "normal",
            )
            if place == "claim":
                record.claim = text
            elif place == "tool":
                record.source = Source(tool=text)
            elif place == "actor":
                record.source = Source(tool="pytest", actor=text)
            elif place == "file":
                record.location = Location(file=text)
            elif place == "blob":
                raw_id = new_id("raw")
                data = text.encode()
                if sensitive:
                    data = b"x" * (SHARE_BLOB_MAX + 1) + b"\n" + data
                stored, _ = txn.stage_blob(f"raw/{raw_id}.txt", data, redact=False)
                from cortex.cases.digest import sha256_hex

                record.raw_ref = f"case://{task}/raw/{raw_id}"
                record.raw_sha256 = sha256_hex(stored)
            elif place == "question":
                decision_id = new_id("dec")
                decisions.append(
                    Decision(
                        id=decision_id,
                        question=text,
                        options=[
                            DecisionOption(id="a", label="A"),
                            DecisionOption(id="b", label="B"),
                        ],
                        requester="planter",
                        requested_at="2030-01-01T00:00:00.000Z",
                        status="answered",
                        answer="a",
                        responder="someone",
                        answered_at="2030-01-01T00:00:00.000Z",
                    )
                )
                ids.append(decision_id)
                continue
            elif place == "command":
                command = Command(
                    id=new_id("cmd"),
                    timestamp="2030-01-01T00:00:00.000Z",
                    actor="planter",
                    operation="test.plant",
                    duration_ms=0,
                    note=text,
                )
                txn.append("commands", command)
                ids.append(command.id)
                continue
            txn.append("evidence", record)
            ids.append(record.id)
        if decisions:
            txn.stage_snapshot("decisions.json", Decisions(decisions=decisions))
    return ids


def _needles(shapes: list[Entry]) -> list[str]:
    return [n for e in shapes for n in e.needles]


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return make_machine(tmp_path, "a", make_remote(tmp_path))


def test_a_share_with_any_planted_secret_is_refused_and_nothing_leaves(
    machine: Machine, tmp_path: Path
) -> None:
    task = machine.ok("case", "open", "Fix the login redirect")["taskId"]
    planted = _plant(machine, task, SHAPES, sensitive=False)
    remote = tmp_path / "remote.git"
    before = remote_refs(remote, machine.env)
    for args in (["case", "share", task], ["case", "share", task, "--dry-run"],
                 ["case", "bundle", task, "-o", str(tmp_path / "x.bundle")]):  # fmt: skip
        out = machine(*args)
        assert out.code == 5, out.stdout
        assert out.error_code == "refused", out.stdout
        named = set(out.envelope["data"]["records"])
        assert named == set(planted), sorted(set(planted) ^ named)
        assert needles_in(out.stdout.encode(), _needles(SHAPES)) == []
    assert remote_refs(remote, machine.env) == before
    assert machine.git("for-each-ref", "refs/cortex/") == ""
    assert not (tmp_path / "x.bundle").exists()
    # Not one object holding a secret was written, anywhere.
    assert needles_in(every_object(machine.repo, machine.env), _needles(SHAPES)) == []
    assert needles_in(every_object(remote, machine.env), _needles(SHAPES)) == []


def test_sensitive_records_and_big_blobs_travel_as_stubs_and_the_remote_stays_clean(
    machine: Machine, tmp_path: Path
) -> None:
    task = machine.ok("case", "open", "Fix the login redirect")["taskId"]
    planted = _plant(machine, task, SHAPES, sensitive=True)
    data = machine.ok("case", "share", task)
    (case,) = data["cases"]
    assert case["pushed"] is True
    withheld = {w["id"] for w in case["withheld"]}
    assert set(planted) <= withheld
    remote = tmp_path / "remote.git"
    assert needles_in(every_object(remote, machine.env), _needles(SHAPES)) == []
    # The other machine sees that the records exist, and that they were withheld.
    other = make_machine(tmp_path, "b", remote)
    other.ok("case", "fetch", task)
    for record_id in planted[:5]:
        record = other.ok("case", "read-evidence", task, record_id)["evidence"]
        assert record["sensitivity"] == "sensitive"
    report = other.ok("case", "audit", task)
    assert report["ok"] is True


def test_a_literal_configured_after_the_fact_refuses_the_share(
    machine: Machine, tmp_path: Path
) -> None:
    task = machine.ok("case", "open", "Fix the login redirect")["taskId"]
    record = machine.ok(
        "case", "evidence", "add", task, "--claim", "tenant acme-tenant-7731 reported it"
    )["evidence"]["id"]
    toml = machine.repo / "cortex.toml"
    toml.write_text('redact_literals = ["acme-tenant-7731"]\n' + toml.read_text())
    out = machine("case", "share", task)
    assert out.code == 5
    assert out.error_code == "refused"
    assert out.envelope["data"]["records"] == [record]
    assert "acme-tenant-7731" not in out.stdout
    assert git(tmp_path / "remote.git", "for-each-ref", "refs/cortex/", env=machine.env) == ""
    assert json.loads(out.stdout)["error"]["message"].count(record) == 1
