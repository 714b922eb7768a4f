"""The pure parts of sharing, each against an independent oracle or its rule in sharing.md."""

from __future__ import annotations

import hmac
import os
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cortex.cases.replica_index import Fence, Origin
from cortex.share.history import Lines, fork_suffix, relation
from cortex.share.objects import Entry, encode_tree, object_id
from cortex.share.project import PathMap
from cortex.share.replica_id import hmac_sha256
from cortex.share.resolve import State, fold


@given(st.binary(max_size=200), st.binary(max_size=200))
def test_hmac_is_rfc_2104(key: bytes, message: bytes) -> None:
    assert hmac_sha256(key, message) == hmac.new(key, message, "sha256").hexdigest()


def test_object_ids_are_gits(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], env=env, check=True)
    data = b"a line\n" * 10
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=tmp_path / "r", env=env, input=data, capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    assert object_id("blob", data, "sha1") == blob
    entries = {
        "b.json": Entry("100644", blob),
        "a": Entry("40000", "4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
    }
    listing = f"100644 blob {blob}\tb.json\n040000 tree {entries['a'].oid}\ta\n"
    tree = subprocess.run(
        ["git", "mktree", "--missing"],
        cwd=tmp_path / "r", env=env, input=listing.encode(), capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    assert object_id("tree", encode_tree(entries), "sha1") == tree


def test_paths_are_mapped_only_where_they_end() -> None:
    paths = PathMap([("/home/alice/src/app", "<workspace>"), ("/home/alice", "<home>")])
    assert paths.text("see /home/alice/src/app/x.py") == "see <workspace>/x.py"
    assert paths.text("cache at /home/alice/.cache") == "cache at <home>/.cache"
    assert paths.text("/home/alicex stays") == "/home/alicex stays"
    assert paths.data(b"/home/alice/src/app:1") == b"<workspace>:1"
    assert not paths.present(paths.data(b"x /home/alice/src/app y /home/alice z"))


def _state(
    key: str, epoch: int, lamport: int, digest: str, origin: Origin | None, *, known: dict[str, int]
) -> State:
    return State(
        key=key,
        fence=Fence(epoch=epoch, lamport=lamport, replica=key or "rep_local"),
        digest=digest,
        origin=origin,
        known=known,
    )


def test_a_state_that_knew_the_local_change_wins_without_a_conflict() -> None:
    local = _state("", 0, 10, "d1", Origin(replica="A", lamport=5), known={"A": 5})
    theirs = _state("B", 0, 12, "d2", Origin(replica="B", lamport=12), known={"A": 5, "B": 12})
    outcome = fold(local, [theirs])
    assert outcome is not None
    assert outcome.winner.key == "B"
    assert outcome.conflicts == []


def test_a_change_the_winner_never_saw_is_a_conflict_either_way() -> None:
    local = _state("", 0, 11, "d3", Origin(replica="A", lamport=11), known={"A": 11})
    theirs = _state("B", 0, 12, "d2", Origin(replica="B", lamport=12), known={"A": 5, "B": 12})
    outcome = fold(local, [theirs])
    assert outcome is not None
    assert outcome.winner.key == "B"
    ((winner, loser),) = outcome.conflicts
    assert (winner.key, loser.key) == ("B", "")
    # The other way round: the local state is fenced higher (a newer lease epoch).
    local = _state("", 2, 3, "d3", Origin(replica="A", lamport=3), known={"A": 3})
    outcome = fold(local, [theirs])
    assert outcome is not None
    assert outcome.winner.key == ""
    ((winner, loser),) = outcome.conflicts
    assert (winner.key, loser.key) == ("", "B")
    # Once recorded, the change is known: folding again records nothing more.
    again = _state("", 2, 4, "d3", Origin(replica="A", lamport=3), known=outcome.known)
    assert fold(again, [theirs]) is not None
    assert fold(again, [theirs]).conflicts == []  # type: ignore[union-attr]


def test_the_same_content_is_no_conflict_whoever_made_it() -> None:
    local = _state("", 0, 9, "same", Origin(replica="A", lamport=9), known={"A": 9})
    theirs = _state("B", 0, 20, "same", Origin(replica="B", lamport=20), known={"B": 20})
    outcome = fold(local, [theirs])
    assert outcome is not None
    assert outcome.winner.key == ""
    assert outcome.conflicts == []


def _lines(task: str, commands: list[str]) -> Lines:
    from cortex.cases import ledger
    from cortex.cases.records import Command, encode

    prev = ledger.genesis(task, "commands")
    out = []
    for index, name in enumerate(commands):
        record = Command(
            id=f"cmd_{'0' * 25}{index}", timestamp="2030-01-01T00:00:00.000Z", actor="a",
            operation=name, duration_ms=0, revision=1, prev=prev,
        )  # fmt: skip
        line = encode(record)
        prev = ledger.line_hash(line)
        out.append(line)
    return Lines(task, {"commands": out, "evidence": [], "phases": []})


def test_histories_extend_or_diverge_and_a_fork_is_named_by_its_first_new_line() -> None:
    task = "task_01M8T2AAAAAAAAAAAAAAAAAAAA"
    base = _lines(task, ["x", "y"])
    longer = _lines(task, ["x", "y", "z"])
    other = _lines(task, ["x", "w", "v"])
    assert relation(longer, base) == "first"
    assert relation(base, longer) == "second"
    assert relation(base, _lines(task, ["x", "y"])) == "equal"
    assert relation(longer, other) == "diverged"
    suffix = fork_suffix(longer, other)
    assert suffix == other.hash_at("commands", 2)[:8]
    assert fork_suffix(longer, _lines(task, ["x", "w", "v", "u"])) == suffix
