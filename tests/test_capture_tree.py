"""The tree-id path of the workspace capture, one behaviour at a time (verification.md §1.1).

`cortex/workspace/working_tree.py` names the working state's git tree for the capture: HEAD's
tree with every path `git status` lists as `git add -A` would store it. The end-to-end proof
that the answer is git's is `tests/test_tree_equivalence.py` (hypothesis against `git add -A &&
git write-tree`); this file pins each step on its own and fast, so a mutation run can use it:

- the planning functions (`_ordinary`, `_work_tree_entry`, `_hidden`, `_safer_crlf`,
  `working_tree_id`) over hand-built status records and a fake `Helpers` that answers from an
  in-memory store of real git-format objects and records every call;
- `Helpers` itself against a small real repository (`git cat-file --batch` and
  `git hash-object --stdin-paths`), with fakes only to inject faults (a dead process, a pipe
  that answers garbage, a hung hasher);
- `_finish`'s tree part through `capture.capture` on tiny real repositories, with git's own
  `git add -A && git write-tree` (on a copy of the index) as the oracle.

Expected tree ids are computed from scratch (`Store.tree`, from `tree_id.serialize_tree` and
`tree_id.object_id`), never by the builder under test; `Store.tree` is itself checked against git.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import threading
import time
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import base_env, git, make_repo

from cortex.workspace import capture, tree_id, working_tree
from cortex.workspace.capture import Capture
from cortex.workspace.tree_id import Entry
from cortex.workspace.working_tree import NoTreeError

REG = tree_id.REGULAR
EXE = tree_id.EXECUTABLE
LNK = tree_id.SYMLINK
GITLINK = tree_id.GITLINK
ZERO = b"000000"
ZERO_ID = "0" * 40
MISSING, LINK, DIR, REGULAR, EXECUTABLE = (
    working_tree.DISK_MISSING,
    working_tree.DISK_LINK,
    working_tree.DISK_DIR,
    working_tree.DISK_REGULAR,
    working_tree.DISK_EXECUTABLE,
)
FIFO_REASON = (
    " could not be read as a file, a symlink or a repository (a FIFO, a socket, or no permission?)"
)
ATTRIBUTES_REASON = (
    " is in the index but not a file in the work tree, so which attributes git add would apply"
    " cannot be known"
)
CRLF_REASON = (
    " has CRLF line endings in the index and the work tree: git add's safer-autocrlf rule reads"
    " the index, which hash-object does not"
)
UNHASHED = "a listed file could not be hashed (it changed while it was captured?)"
UNREADABLE = "a listed file could not be read for its tree entry"


@pytest.fixture(autouse=True)
def _bounded_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git helper that hangs (under a mutant) is killed by the watchdog within seconds."""
    monkeypatch.setattr(capture, "GIT_TIMEOUT", 10.0)
    monkeypatch.setattr(working_tree, "GIT_TIMEOUT", 10.0)


# -- an in-memory object store and a fake `Helpers` --------------------------------------------


class Store:
    """Git objects by hex id: (type, body), in git's byte format."""

    def __init__(self, algorithm: str = "sha1") -> None:
        self.algorithm = algorithm
        self.objects: dict[str, tuple[bytes, bytes]] = {}

    @property
    def width(self) -> int:
        return 32 if self.algorithm == "sha256" else 20

    def put(self, kind: bytes, body: bytes) -> str:
        oid = tree_id.object_id(kind, body, self.algorithm).hex()
        self.objects[oid] = (kind, body)
        return oid

    def blob(self, data: bytes) -> bytes:
        """The raw id of a blob (not stored: the tree only names it)."""
        return tree_id.object_id(b"blob", data, self.algorithm)

    def tree(self, state: Mapping[bytes, Entry]) -> str:
        """Store the trees of a flat state (path -> entry), from scratch; the root's hex id."""
        nested: dict[bytes, Any] = {}
        for path, entry in state.items():
            *dirs, name = path.split(b"/")
            node = nested
            for part in dirs:
                node = node.setdefault(part, {})
            node[name] = entry
        return self._write(nested).hex()

    def _write(self, node: dict[bytes, Any]) -> bytes:
        entries: dict[bytes, Entry] = {}
        for name, value in node.items():
            if isinstance(value, dict):
                entries[name] = (tree_id.TREE, self._write(value))
            else:
                entries[name] = value
        return bytes.fromhex(self.put(b"tree", tree_id.serialize_tree(entries)))

    def commit(self, tree: str) -> str:
        body = b"tree " + tree.encode() + b"\nauthor A <a@example.invalid> 0 +0000\n"
        body += b"committer A <a@example.invalid> 0 +0000\n\nbase\n"
        return self.put(b"commit", body)


class FakeHelpers:
    """Stands in for `Helpers`: answers from a `Store` and records every call, in order."""

    def __init__(
        self,
        store: Store,
        *,
        prefetch: str | None = None,
        contents: Mapping[bytes, bytes] | None = None,
        ids: Mapping[bytes, str] | None = None,
        file_mode: bool = True,
    ) -> None:
        self.store = store
        self.prefetch = prefetch
        self.contents = dict(contents or {})
        self.ids = dict(ids or {})
        self.file_mode = file_mode
        self.calls: list[tuple[str, object]] = []

    def _id(self, path: bytes) -> str:
        if path in self.ids:
            return self.ids[path]
        return self.store.blob(self.contents[path]).hex()

    def prefetched(self, head: str) -> tuple[str, tree_id.ParsedTree] | None:
        self.calls.append(("prefetched", head))
        if head != self.prefetch:
            return None
        body = self.store.objects[head][1]
        tree = body[5 : body.index(b"\n")].decode()
        return tree, tree_id.ParsedTree(self.store.objects[tree][1], self.store.width)

    def read(self, requests: list[str]) -> dict[str, tuple[str, bytes, bytes]]:
        self.calls.append(("read", list(requests)))
        found = {}
        for name in requests:
            if name in self.store.objects:
                kind, body = self.store.objects[name]
                found[name] = (name, kind, body)
        return found

    def trees(self, oids: list[bytes]) -> dict[bytes, bytes]:
        self.calls.append(("trees", [oid.hex() for oid in oids]))
        found = {}
        for oid in oids:
            kind, body = self.store.objects.get(oid.hex(), (b"", b""))
            if kind == b"tree":
                found[oid] = body
        return found

    def hash_paths(self, paths: list[bytes]) -> dict[bytes, str]:
        self.calls.append(("hash_paths", list(paths)))
        return {path: self._id(path) for path in paths}

    def hash_one(self, path: bytes) -> str:
        self.calls.append(("hash_one", path))
        return self._id(path)

    def trusts_file_mode(self) -> bool:
        self.calls.append(("trusts_file_mode", None))
        return self.file_mode

    def feed(self, path: bytes) -> None:
        self.calls.append(("feed", path))


def as_helpers(fake: FakeHelpers) -> working_tree.Helpers:
    return cast("working_tree.Helpers", fake)


def seen_of(
    *records: tuple[bytes, bytes],
    hidden: Sequence[tuple[bytes, bytes]] = (),
    disk: Mapping[bytes, int] | None = None,
    links: Mapping[bytes, bytes] | None = None,
    nested: Mapping[bytes, Capture] | None = None,
    carriage: Sequence[bytes] = (),
) -> working_tree.Seen:
    seen = working_tree.Seen()
    seen.records.extend(records)
    seen.hidden.extend(hidden)
    seen.disk.update(disk or {})
    seen.links.update(links or {})
    seen.nested.update(nested or {})
    seen.carriage.update(carriage)
    return seen


def ordinary(
    xy: bytes, modes: tuple[bytes, bytes, bytes], head_blob: str, index_blob: str
) -> bytes:
    """The fields of a `1 XY sub mH mI mW hH hI` status record (the path is apart)."""
    return b" ".join([b"1", xy, b"N...", *modes, head_blob.encode(), index_blob.encode()])


BASE_FILES: dict[bytes, tuple[bytes, bytes]] = {
    b"app.py": (REG, b"app\n"),
    b"run.sh": (EXE, b"run\n"),
    b"lib/util.py": (REG, b"util\n"),
    b"lib/deep/x.txt": (REG, b"x\n"),
    b"link": (LNK, b"app.py"),
}


@dataclass
class World:
    """HEAD in an in-memory store: BASE_FILES committed."""

    store: Store
    state: dict[bytes, Entry]
    head_tree: str
    head: str
    lib_tree: str

    @classmethod
    def make(cls, algorithm: str = "sha1") -> World:
        store = Store(algorithm)
        state = {path: (mode, store.blob(data)) for path, (mode, data) in BASE_FILES.items()}
        head_tree = store.tree(state)
        lib = {path[4:]: entry for path, entry in state.items() if path.startswith(b"lib/")}
        lib_tree = Store(algorithm).tree(lib)
        return cls(store, state, head_tree, store.commit(head_tree), lib_tree)

    def blob(self, path: bytes) -> str:
        return self.state[path][1].hex()

    def expect(self, changes: Mapping[bytes, Entry | None]) -> str:
        """The tree id of HEAD's state with `changes`, built from scratch elsewhere."""
        state = dict(self.state)
        for path, entry in changes.items():
            if entry is None:
                state.pop(path, None)
            else:
                state[path] = entry
        return Store(self.store.algorithm).tree(state)


@pytest.fixture
def world() -> World:
    return World.make()


def refusal(action: Any, *args: Any, **kwargs: Any) -> str:
    """The message of the NoTreeError `action` raises."""
    with pytest.raises(NoTreeError) as info:
        action(*args, **kwargs)
    return str(info.value)


# -- the store's own writer is git's --------------------------------------------------------


def test_the_from_scratch_writer_gives_gits_tree_ids(shared: Shared) -> None:
    """The oracle of this file: `Store.tree` over a committed state is `HEAD^{tree}`."""
    listing = git(shared.root, "ls-tree", "-r", "-z", "HEAD", env=shared.env)
    state: dict[bytes, Entry] = {}
    for record in listing.split("\0"):
        if record:
            info, path = record.split("\t")
            mode, _kind, oid = info.split()
            state[path.encode()] = (mode.encode(), bytes.fromhex(oid))
    assert Store().tree(state) == shared.head_tree


# -- small pure functions ---------------------------------------------------------------------


class TestLineSafe:
    @pytest.mark.parametrize(
        ("path", "safe"),
        [
            (b"app.py", True),
            (b'a"b', True),
            (b'b"', True),
            (b"a\nb", False),
            (b"a\rb", False),
            (b'"quoted".txt', False),
            (b"\n", False),
        ],
        ids=["plain", "inner-quote", "trailing-quote", "newline", "cr", "leading-quote", "lf"],
    )
    def test_only_newlines_carriage_returns_and_a_leading_quote_are_unsafe(
        self, path: bytes, safe: bool
    ) -> None:
        """`hash-object --stdin-paths` reads a path back as it is unless it has one of those."""
        assert working_tree._line_safe(path) is safe


class TestIsAttributes:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            (b".gitattributes", True),
            (b"sub/.gitattributes", True),
            (b"a/b/.gitattributes", True),
            (b"x.gitattributes", False),
            (b"sub/x.gitattributes", False),
            (b".gitattributes.bak", False),
            (b".GITATTRIBUTES", False),
        ],
    )
    def test_a_gitattributes_file_at_the_root_or_in_a_directory(
        self, path: bytes, expected: bool
    ) -> None:
        """Only a file named exactly `.gitattributes` counts, at any depth."""
        assert working_tree._is_attributes(path) is expected


class TestHashed:
    H = "1" * 40

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            (b"?", True),
            (b"u UU N... 100644 100644 100644 100644 a b c", True),
            (ordinary(b".M", (REG, REG, REG), H, H), True),
            (ordinary(b"MM", (REG, REG, EXE), H, H), True),
            (ordinary(b".A", (ZERO, ZERO, REG), H, H), True),
            (ordinary(b"M.", (REG, EXE, EXE), H, H), False),
            (ordinary(b".D", (REG, REG, ZERO), H, H), False),
            (ordinary(b"MD", (REG, REG, REG), H, H), False),
            (ordinary(b".T", (REG, REG, LNK), H, H), False),
            (ordinary(b".M", (GITLINK, GITLINK, GITLINK), H, H), False),
            (b"2 R. N... 100644 100644 100644 a b R100 new", False),
            (b"!", False),
            (b"hidden:S 100644 " + H.encode(), False),
        ],
        ids=[
            "untracked",
            "conflict",
            "modified",
            "staged-and-modified",
            "intent-to-add",
            "staged-only",
            "deleted",
            "deleted-after-staging",
            "now-a-symlink",
            "submodule",
            "rename",
            "ignored",
            "hidden",
        ],
    )
    def test_the_work_tree_file_is_hashed_for_untracked_conflicted_and_changed_files(
        self, fields: bytes, expected: bool
    ) -> None:
        """Untracked and conflicted always; ordinary only a regular file changed on disk."""
        assert working_tree.hashed(fields) is expected


class TestSeenAndPlan:
    def test_a_fresh_seen_is_empty(self) -> None:
        """`Seen` starts with empty collections and no feed."""
        seen = working_tree.Seen()
        assert seen.records == []
        assert seen.hidden == []
        assert seen.disk == {}
        assert seen.links == {}
        assert seen.nested == {}
        assert seen.carriage == set()
        assert seen.feed is None

    def test_a_fresh_plan_is_empty_and_keeps_its_algorithm(self) -> None:
        """`_Plan` starts with no changes, nothing to hash and no index blobs."""
        plan = working_tree._Plan("sha256")
        assert plan.algorithm == "sha256"
        assert plan.changes == {}
        assert plan.hash == []
        assert plan.index_blobs == {}


class TestReadRegular:
    def test_reads_every_chunk_in_order(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The whole file, read chunk by chunk and joined without anything in between."""
        monkeypatch.setattr(working_tree, "CHUNK", 3)
        path = tmp_path / "f"
        path.write_bytes(b"0123456789ab\r\n")
        assert working_tree._read_regular(os.fsencode(path)) == b"0123456789ab\r\n"

    def test_an_empty_file_is_empty(self, tmp_path: Path) -> None:
        """No chunk at all gives no bytes."""
        (tmp_path / "e").write_bytes(b"")
        assert working_tree._read_regular(os.fsencode(tmp_path / "e")) == b""

    def test_a_symlink_is_not_followed(self, tmp_path: Path) -> None:
        """O_NOFOLLOW: a file swapped for a symlink is refused, not read through."""
        (tmp_path / "target").write_bytes(b"secret")
        (tmp_path / "link").symlink_to("target")
        assert refusal(working_tree._read_regular, os.fsencode(tmp_path / "link")) == UNREADABLE

    def test_a_missing_file_is_refused(self, tmp_path: Path) -> None:
        """A file gone since it was listed cannot be hashed."""
        assert refusal(working_tree._read_regular, os.fsencode(tmp_path / "gone")) == UNREADABLE

    def test_a_fifo_that_never_answers_is_refused_not_waited_on(self, tmp_path: Path) -> None:
        """O_NONBLOCK: a FIFO swapped in for a file, its writer silent, is refused at once."""
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        closed: list[bool] = []

        def answer() -> None:
            # Were the read to block, this answers it a second later (a run cannot hang).
            os.write(writer, b"late")
            os.close(writer)
            closed.append(True)

        late = threading.Timer(1.0, answer)
        late.start()
        try:
            assert refusal(working_tree._read_regular, os.fsencode(fifo)) == UNREADABLE
        finally:
            late.cancel()
            late.join()
            if not closed:
                os.close(writer)

    def test_a_fifo_without_a_writer_is_refused_not_read_as_empty(self, tmp_path: Path) -> None:
        """Kills `_read_regular` 6 (`O_NONBLOCK` dropped: the open waits for a writer, and the
        run times out): only a regular file is read. A FIFO with no writer opens and reads as
        end of file at once, which must not become the empty blob in the tree id (it is never
        guessed)."""
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        assert refusal(working_tree._read_regular, os.fsencode(fifo)) == UNREADABLE

    def test_a_directory_is_refused(self, tmp_path: Path) -> None:
        """A directory opens, but is not a regular file: the same refusal."""
        (tmp_path / "d").mkdir()
        assert refusal(working_tree._read_regular, os.fsencode(tmp_path / "d")) == UNREADABLE

    def test_a_read_error_is_refused(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Kills `_read_regular` 26-29: a regular file whose read fails (an I/O error, injected)
        is the same refusal, with its message."""
        path = tmp_path / "f"
        path.write_bytes(b"data")

        def failing_read(_fd: int, _size: int) -> bytes:
            raise OSError(5, "Input/output error")

        refused: str | None = None
        with monkeypatch.context() as patch:
            patch.setattr(os, "read", failing_read)
            try:
                working_tree._read_regular(os.fsencode(path))
            except NoTreeError as exc:
                refused = str(exc)
        assert refused == UNREADABLE


class TestReap:
    def test_a_running_process_is_killed_and_its_pipes_closed(self) -> None:
        """A live helper is killed (not waited for) and every pipe it has is closed."""
        process = subprocess.Popen(
            ["sleep", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
        )
        working_tree._reap(process)
        assert process.returncode == -signal.SIGKILL
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stdin.closed
        assert process.stdout.closed

    def test_a_finished_process_is_reaped_as_it_ended(self) -> None:
        """A process that already exited keeps its own exit status."""
        process = subprocess.Popen(["sh", "-c", "exit 3"], stdout=subprocess.PIPE)
        process.wait()
        working_tree._reap(process)
        assert process.returncode == 3
        assert process.stdout is not None
        assert process.stdout.closed

    def test_a_pipe_that_fails_to_close_is_closed_quietly(self) -> None:
        """Unflushed bytes to a dead process break its pipe on close: that is not an error."""
        process = subprocess.Popen(["true"], stdin=subprocess.PIPE)
        process.wait()
        assert process.stdin is not None
        process.stdin.write(b"pending")
        working_tree._reap(process)
        assert process.stdin.closed


# -- one status record: _ordinary --------------------------------------------------------------


class TestOrdinary:
    H = "a" * 40
    B = "b" * 40

    def run(
        self,
        path: bytes,
        fields: bytes,
        *,
        disk: Mapping[bytes, int] | None = None,
        links: Mapping[bytes, bytes] | None = None,
        carriage: Sequence[bytes] = (),
        file_mode: bool = True,
    ) -> tuple[working_tree._Plan, FakeHelpers]:
        plan = working_tree._Plan("sha1")
        fake = FakeHelpers(Store(), file_mode=file_mode)
        seen = seen_of(disk=disk, links=links, carriage=carriage)
        working_tree._ordinary(plan, seen, as_helpers(fake), path, fields.split(b" "))
        return plan, fake

    def test_a_change_in_the_work_tree_hashes_the_file(self) -> None:
        """`.M`: the file is hashed with git's work-tree mode; the index blob is not asked."""
        plan, fake = self.run(
            b"app.py", ordinary(b".M", (REG, REG, REG), self.H, self.B), disk={b"app.py": REGULAR}
        )
        assert plan.hash == [(b"app.py", REG)]
        assert plan.changes == {}
        assert plan.index_blobs == {}
        assert fake.calls == []

    def test_the_work_tree_mode_git_gave_is_kept(self) -> None:
        """With core.fileMode false git reports the index's 100755 for a 0644 file: kept as is."""
        plan, fake = self.run(
            b"run.sh", ordinary(b".M", (REG, EXE, EXE), self.H, self.B), disk={b"run.sh": REGULAR}
        )
        assert plan.hash == [(b"run.sh", EXE)]
        assert fake.calls == []

    def test_a_staged_change_takes_the_index_entry(self) -> None:
        """`M.`: the work tree matches the index; the entry is the index's mode and blob."""
        plan, _ = self.run(
            b"run.sh", ordinary(b"M.", (REG, EXE, EXE), self.H, self.B), disk={b"run.sh": REGULAR}
        )
        assert plan.changes == {b"run.sh": (EXE, bytes.fromhex(self.B))}
        assert plan.hash == []

    def test_a_path_removed_from_the_index_is_dropped(self) -> None:
        """`D.` (git rm --cached): index mode 000000 means no entry, whatever is on disk."""
        plan, _ = self.run(
            b"b.txt", ordinary(b"D.", (REG, ZERO, ZERO), self.H, ZERO_ID), disk={b"b.txt": REGULAR}
        )
        assert plan.changes == {b"b.txt": None}
        assert plan.hash == []

    def test_a_deletion_in_the_work_tree_is_dropped(self) -> None:
        """` D`: deleted on disk, so `git add -A` drops the entry."""
        plan, _ = self.run(
            b"app.py", ordinary(b".D", (REG, REG, ZERO), self.H, self.B), disk={b"app.py": MISSING}
        )
        assert plan.changes == {b"app.py": None}
        assert plan.hash == []

    def test_work_side_d_alone_drops_the_entry(self) -> None:
        """A `D` work side drops the path even if a mode were given for the work tree."""
        plan, _ = self.run(
            b"app.py", ordinary(b"MD", (REG, REG, REG), self.H, self.B), disk={b"app.py": REGULAR}
        )
        assert plan.changes == {b"app.py": None}
        assert plan.hash == []

    def test_work_mode_zero_alone_drops_the_entry(self) -> None:
        """A work-tree mode of 000000 drops the path whatever the work side letter."""
        plan, _ = self.run(
            b"app.py", ordinary(b".M", (REG, REG, ZERO), self.H, self.B), disk={b"app.py": REGULAR}
        )
        assert plan.changes == {b"app.py": None}
        assert plan.hash == []

    def test_a_file_turned_symlink_is_a_symlink_entry(self) -> None:
        """`.T` to a symlink: the entry is the link's target as a blob, nothing is hashed."""
        plan, _ = self.run(
            b"app.py",
            ordinary(b".T", (REG, REG, LNK), self.H, self.B),
            disk={b"app.py": LINK},
            links={b"app.py": b"run.sh"},
        )
        assert plan.changes == {b"app.py": (LNK, Store().blob(b"run.sh"))}
        assert plan.hash == []

    def test_a_tracked_file_with_carriage_returns_remembers_its_index_blob(self) -> None:
        """The index blob of a hashed CRLF file is kept for the safer-autocrlf check."""
        plan, _ = self.run(
            b"w.txt",
            ordinary(b".M", (REG, REG, REG), self.H, self.B),
            disk={b"w.txt": REGULAR},
            carriage=[b"w.txt"],
        )
        assert plan.index_blobs == {b"w.txt": self.B}
        assert plan.hash == [(b"w.txt", REG)]

    def test_an_intent_to_add_file_has_no_index_blob(self) -> None:
        """`.A` (git add -N): index mode 000000, so no index blob even with carriage returns."""
        plan, _ = self.run(
            b"n.txt",
            ordinary(b".A", (ZERO, ZERO, REG), ZERO_ID, ZERO_ID),
            disk={b"n.txt": REGULAR},
            carriage=[b"n.txt"],
        )
        assert plan.index_blobs == {}
        assert plan.hash == [(b"n.txt", REG)]

    @pytest.mark.parametrize("path", [b".gitattributes", b"sub/.gitattributes"])
    @pytest.mark.parametrize(
        "state", [MISSING, LINK, DIR, None], ids=["gone", "link", "dir", "fifo"]
    )
    def test_attributes_in_the_index_but_not_a_file_refuse(
        self, path: bytes, state: int | None
    ) -> None:
        """A tracked .gitattributes that is not a regular file on disk: no tree id."""
        disk = {} if state is None else {path: state}
        message = refusal(
            self.run, path, ordinary(b".D", (REG, REG, ZERO), self.H, self.B), disk=disk
        )
        assert message == path.decode() + ATTRIBUTES_REASON

    @pytest.mark.parametrize("state", [REGULAR, EXECUTABLE], ids=["regular", "executable"])
    def test_attributes_that_are_a_file_are_hashed(self, state: int) -> None:
        """A .gitattributes that is a file on disk is hashed like any other file."""
        plan, _ = self.run(
            b".gitattributes",
            ordinary(b".M", (REG, REG, REG), self.H, self.B),
            disk={b".gitattributes": state},
        )
        assert plan.hash == [(b".gitattributes", REG)]

    def test_attributes_not_in_the_index_do_not_refuse(self) -> None:
        """Index mode 000000: the index has no attributes git could read instead."""
        plan, _ = self.run(
            b".gitattributes",
            ordinary(b"D.", (REG, ZERO, ZERO), self.H, ZERO_ID),
            disk={b".gitattributes": MISSING},
        )
        assert plan.changes == {b".gitattributes": None}

    def test_another_file_missing_from_the_work_tree_does_not_refuse(self) -> None:
        """Only attributes files get the index rule: another deleted file is just dropped."""
        plan, _ = self.run(
            b"x.gitattributes",
            ordinary(b".D", (REG, REG, ZERO), self.H, self.B),
            disk={b"x.gitattributes": MISSING},
        )
        assert plan.changes == {b"x.gitattributes": None}


# -- the entry a path gets from the work tree: _work_tree_entry -------------------------------


class TestWorkTreeEntry:
    def run(
        self,
        path: bytes,
        *,
        mode: bytes | None = None,
        index_blob: str | None = None,
        key: bytes | None = None,
        disk: Mapping[bytes, int] | None = None,
        links: Mapping[bytes, bytes] | None = None,
        nested: Mapping[bytes, Capture] | None = None,
        carriage: Sequence[bytes] = (),
        file_mode: bool = True,
        algorithm: str = "sha1",
    ) -> tuple[working_tree._Plan, FakeHelpers]:
        plan = working_tree._Plan(algorithm)
        fake = FakeHelpers(Store(algorithm), file_mode=file_mode)
        seen = seen_of(disk=disk, links=links, nested=nested, carriage=carriage)
        working_tree._work_tree_entry(
            plan, seen, as_helpers(fake), path, mode=mode, index_blob=index_blob, key=key
        )
        return plan, fake

    def test_a_file_gone_since_status_is_dropped(self) -> None:
        """Missing on disk now: `git add -A` would drop it."""
        plan, _ = self.run(b"a.txt", disk={b"a.txt": MISSING})
        assert plan.changes == {b"a.txt": None}
        assert plan.hash == []

    @pytest.mark.parametrize("algorithm", ["sha1", "sha256"])
    def test_a_symlink_is_its_target_as_a_blob(self, algorithm: str) -> None:
        """A symlink's entry is mode 120000 and the blob of its target, in the repo's hash."""
        plan, _ = self.run(
            b"ln", disk={b"ln": LINK}, links={b"ln": b"../t\xe9"}, algorithm=algorithm
        )
        assert plan.changes == {b"ln": (LNK, Store(algorithm).blob(b"../t\xe9"))}
        assert plan.hash == []

    def test_a_plain_directory_refuses(self) -> None:
        """A directory where git lists a file, with no repository inside: no tree id."""
        message = refusal(self.run, b"d", disk={b"d": DIR})
        assert message == "d is a directory where git lists a file"

    def test_names_that_are_not_utf8_are_escaped_in_reasons(self) -> None:
        """A reason names the path with undecodable bytes backslash-escaped."""
        message = refusal(self.run, b"caf\xe9", disk={b"caf\xe9": DIR})
        assert message == "caf\\xe9 is a directory where git lists a file"

    def test_a_nested_repository_without_a_tree_refuses_with_its_reason(self) -> None:
        """A nested repository whose own tree id is unknown gives its reason."""
        inner = Capture(head="1" * 40, tree=None, tree_reason="inner why")
        message = refusal(self.run, b"sub", disk={b"sub": DIR}, nested={b"sub": inner})
        assert message == "the nested repository sub has no tree id: inner why"

    def test_a_nested_repository_without_a_head_refuses(self) -> None:
        """No HEAD in the nested repository: a gitlink cannot name it."""
        inner = Capture(head=None, tree="2" * 40, head_tree="2" * 40)
        message = refusal(self.run, b"sub", disk={b"sub": DIR}, nested={b"sub": inner})
        assert message == "the nested repository sub has no tree id: None"

    def test_a_dirty_nested_repository_refuses(self) -> None:
        """Uncommitted changes in the nested repository: its HEAD does not describe it."""
        inner = Capture(head="1" * 40, tree="2" * 40, head_tree="3" * 40)
        message = refusal(self.run, b"sub", disk={b"sub": DIR}, nested={b"sub": inner})
        assert message == (
            "the nested repository sub has uncommitted changes, which a gitlink cannot name"
        )

    def test_a_clean_nested_repository_is_a_gitlink_to_its_head(self) -> None:
        """A clean nested repository is a 160000 entry naming its HEAD commit."""
        inner = Capture(head="1" * 40, tree="2" * 40, head_tree="2" * 40)
        plan, _ = self.run(b"sub", disk={b"sub": DIR}, nested={b"sub": inner})
        assert plan.changes == {b"sub": (GITLINK, bytes.fromhex("1" * 40))}

    def test_an_untracked_nested_repository_is_found_by_its_listed_name(self) -> None:
        """git lists an untracked repository as `sub/`: disk and nested state are under that key."""
        inner = Capture(head="1" * 40, tree="2" * 40, head_tree="2" * 40)
        plan, _ = self.run(b"sub", key=b"sub/", disk={b"sub/": DIR}, nested={b"sub/": inner})
        assert plan.changes == {b"sub": (GITLINK, bytes.fromhex("1" * 40))}

    @pytest.mark.parametrize("mode", [LNK, GITLINK])
    def test_a_file_where_git_saw_a_link_or_gitlink_refuses(self, mode: bytes) -> None:
        """git's mode says symlink or gitlink, the disk says file: it changed meanwhile."""
        message = refusal(self.run, b"x", mode=mode, disk={b"x": REGULAR})
        assert message == "x changed type while it was captured"

    @pytest.mark.parametrize(
        ("state", "file_mode", "expected", "asked"),
        [
            (REGULAR, True, REG, []),
            (REGULAR, False, REG, []),
            (EXECUTABLE, True, EXE, [("trusts_file_mode", None)]),
            (EXECUTABLE, False, REG, [("trusts_file_mode", None)]),
        ],
        ids=["regular", "regular-no-filemode", "executable", "executable-no-filemode"],
    )
    def test_without_a_mode_the_executable_bit_counts_where_git_trusts_it(
        self, state: int, file_mode: bool, expected: bytes, asked: list[tuple[str, object]]
    ) -> None:
        """Untracked or conflicted: 100755 only for an executable file and core.fileMode."""
        plan, fake = self.run(b"f", disk={b"f": state}, file_mode=file_mode)
        assert plan.hash == [(b"f", expected)]
        assert plan.changes == {}
        assert fake.calls == asked

    @pytest.mark.parametrize(
        ("state", "mode"), [(REGULAR, EXE), (EXECUTABLE, REG)], ids=["regular", "executable"]
    )
    def test_a_mode_git_gave_is_kept(self, state: int, mode: bytes) -> None:
        """git's own mode wins over the disk's executable bit; core.fileMode is not asked."""
        plan, fake = self.run(b"f", mode=mode, disk={b"f": state})
        assert plan.hash == [(b"f", mode)]
        assert fake.calls == []

    def test_the_index_blob_is_kept_only_for_files_with_carriage_returns(self) -> None:
        """index_blobs gets a path only with an index blob and a CR in the file."""
        plan, _ = self.run(b"f", index_blob="ab" * 20, disk={b"f": REGULAR}, carriage=[b"f"])
        assert plan.index_blobs == {b"f": "ab" * 20}
        plan, _ = self.run(b"f", index_blob="ab" * 20, disk={b"f": REGULAR})
        assert plan.index_blobs == {}
        plan, _ = self.run(b"f", disk={b"f": REGULAR}, carriage=[b"f"])
        assert plan.index_blobs == {}

    def test_something_else_refuses(self) -> None:
        """A FIFO, a socket or an unreadable file (no recorded state): no tree id."""
        message = refusal(self.run, b"fifo")
        assert message == "fifo" + FIFO_REASON


# -- assume-unchanged and skip-worktree entries: _hidden --------------------------------------


class TestHidden:
    B = "c" * 40

    def run(
        self,
        path: bytes,
        fields: bytes,
        *,
        disk: Mapping[bytes, int] | None = None,
        carriage: Sequence[bytes] = (),
        file_mode: bool = True,
    ) -> tuple[working_tree._Plan, FakeHelpers]:
        plan = working_tree._Plan("sha1")
        fake = FakeHelpers(Store(), file_mode=file_mode)
        seen = seen_of(disk=disk, carriage=carriage)
        working_tree._hidden(plan, seen, as_helpers(fake), path, fields.split(b" "))
        return plan, fake

    @pytest.mark.parametrize("tag", [b"S", b"s"])
    def test_a_skip_worktree_file_absent_keeps_its_index_entry(self, tag: bytes) -> None:
        """Sparse checkout: absent on purpose, so the index's entry stays."""
        plan, _ = self.run(b"f", tag + b" 100755 " + self.B.encode(), disk={b"f": MISSING})
        assert plan.changes == {b"f": (EXE, bytes.fromhex(self.B))}

    def test_an_assume_unchanged_file_absent_is_dropped(self) -> None:
        """`h` (assume-unchanged) and absent: `git add -A` drops it."""
        plan, _ = self.run(b"f", b"h 100644 " + self.B.encode(), disk={b"f": MISSING})
        assert plan.changes == {b"f": None}

    def test_a_skip_worktree_file_without_an_index_entry_is_dropped(self) -> None:
        """`? ?`: ls-files -s had no entry for it, so there is nothing to keep."""
        plan, _ = self.run(b"f", b"S ? ?", disk={b"f": MISSING})
        assert plan.changes == {b"f": None}

    @pytest.mark.parametrize("tag", [b"S", b"h"])
    def test_a_hidden_file_on_disk_is_hashed_by_its_disk_mode(self, tag: bytes) -> None:
        """core.fileMode true: the disk's executable bit decides, not the index's mode."""
        plan, fake = self.run(b"f", tag + b" 100755 " + self.B.encode(), disk={b"f": REGULAR})
        assert plan.hash == [(b"f", REG)]
        assert plan.changes == {}
        assert fake.calls == [("trusts_file_mode", None)]

    def test_without_file_mode_the_index_mode_is_kept(self) -> None:
        """core.fileMode false: git keeps the index's mode for a file it re-adds."""
        plan, _ = self.run(
            b"f", b"h 100755 " + self.B.encode(), disk={b"f": REGULAR}, file_mode=False
        )
        assert plan.hash == [(b"f", EXE)]

    def test_without_file_mode_and_no_index_mode_the_file_is_regular(self) -> None:
        """core.fileMode false and no known index mode: an executable file is 100644."""
        plan, fake = self.run(b"f", b"h ? ?", disk={b"f": EXECUTABLE}, file_mode=False)
        assert plan.hash == [(b"f", REG)]
        assert fake.calls == [("trusts_file_mode", None)]

    def test_a_symlink_index_mode_is_not_kept(self) -> None:
        """Only a regular index mode is kept without core.fileMode; the disk decides otherwise."""
        plan, fake = self.run(
            b"f", b"h 120000 " + self.B.encode(), disk={b"f": REGULAR}, file_mode=False
        )
        assert plan.hash == [(b"f", REG)]
        assert fake.calls == []

    def test_the_index_blob_is_kept_for_carriage_returns(self) -> None:
        """A hidden file with a CR keeps its index blob for the safer-autocrlf check."""
        plan, _ = self.run(
            b"f", b"h 100644 " + self.B.encode(), disk={b"f": REGULAR}, carriage=[b"f"]
        )
        assert plan.index_blobs == {b"f": self.B}

    def test_an_unknown_index_blob_is_not_kept(self) -> None:
        """`? ?`: there is no index blob to check."""
        plan, _ = self.run(b"f", b"h ? ?", disk={b"f": REGULAR}, carriage=[b"f"])
        assert plan.index_blobs == {}
        assert plan.hash == [(b"f", REG)]

    @pytest.mark.parametrize("state", [MISSING, LINK, None], ids=["gone", "link", "fifo"])
    def test_hidden_attributes_that_are_not_a_file_refuse(self, state: int | None) -> None:
        """A hidden .gitattributes that is not a regular file on disk: no tree id."""
        disk = {} if state is None else {b"d/.gitattributes": state}
        message = refusal(self.run, b"d/.gitattributes", b"S 100644 " + self.B.encode(), disk=disk)
        assert message == "d/.gitattributes" + ATTRIBUTES_REASON

    def test_hidden_attributes_that_are_a_file_are_hashed(self) -> None:
        """A hidden .gitattributes that is a regular file is hashed."""
        plan, _ = self.run(
            b".gitattributes", b"h 100644 " + self.B.encode(), disk={b".gitattributes": EXECUTABLE}
        )
        assert plan.hash == [(b".gitattributes", EXE)]

    def test_the_attributes_reason_escapes_undecodable_names(self) -> None:
        """The reason names the attributes file with undecodable bytes escaped."""
        message = refusal(working_tree._attributes_from_index, b"d\xe9/.gitattributes")
        assert message == "d\\xe9/.gitattributes" + ATTRIBUTES_REASON


# -- git's safer-autocrlf rule: _safer_crlf ---------------------------------------------------


class TestSaferCrlf:
    def run(self, index_blobs: Mapping[bytes, str], store: Store) -> FakeHelpers:
        plan = working_tree._Plan("sha1")
        plan.index_blobs.update(index_blobs)
        fake = FakeHelpers(store)
        working_tree._safer_crlf(plan, as_helpers(fake))
        return fake

    def test_nothing_to_check_reads_nothing(self) -> None:
        """No index blob to check: cat-file is not asked."""
        assert self.run({}, Store()).calls == []

    def test_an_index_version_with_crlf_and_no_nul_refuses(self) -> None:
        """The index's version is text with CRLF: git add would keep CRLF, hash-object not."""
        store = Store()
        blob = store.put(b"blob", b"one\r\ntwo\r\n")
        message = refusal(self.run, {b"w.txt": blob}, store)
        assert message == "w.txt" + CRLF_REASON

    def test_an_index_version_with_a_nul_passes(self) -> None:
        """A NUL makes the index's version binary for git: the rule does not apply."""
        store = Store()
        blob = store.put(b"blob", b"one\r\n\0two\r\n")
        assert self.run({b"w.txt": blob}, store).calls == [("read", [blob])]

    @pytest.mark.parametrize("body", [b"one\ntwo\n", b"one\rtwo\r", b"\0"], ids=["lf", "cr", "nul"])
    def test_an_index_version_without_crlf_passes(self, body: bytes) -> None:
        """No CRLF in the index's version: git converts like hash-object does."""
        store = Store()
        blob = store.put(b"blob", body)
        assert self.run({b"w.txt": blob}, store).calls == [("read", [blob])]

    def test_a_missing_index_version_refuses(self) -> None:
        """An index blob cat-file cannot read errs towards no tree id."""
        message = refusal(self.run, {b"caf\xe9.txt": "d" * 40}, Store())
        assert message == "caf\\xe9.txt" + CRLF_REASON

    def test_blobs_are_asked_once_sorted_and_each_path_checked(self) -> None:
        """One read of the distinct blobs, sorted; a later path can still refuse."""
        store = Store()
        good = store.put(b"blob", b"binary\r\n\0")
        bad = store.put(b"blob", b"text\r\n")
        fake = FakeHelpers(store)
        plan = working_tree._Plan("sha1")
        plan.index_blobs.update({b"a": good, b"b": good, b"c": bad})
        message = refusal(working_tree._safer_crlf, plan, as_helpers(fake))
        assert message == "c" + CRLF_REASON
        assert fake.calls == [("read", sorted({good, bad}))]


# -- the whole plan: working_tree_id -----------------------------------------------------------


def dirty(world: World) -> tuple[working_tree.Seen, dict[bytes, bytes], dict[bytes, Entry | None]]:
    """A modified root file, a deletion below lib/ and an untracked file; the changes expected."""
    seen = seen_of(
        (b"app.py", ordinary(b".M", (REG, REG, REG), world.blob(b"app.py"), world.blob(b"app.py"))),
        (
            b"lib/util.py",
            ordinary(
                b".D", (REG, REG, ZERO), world.blob(b"lib/util.py"), world.blob(b"lib/util.py")
            ),
        ),
        (b"new.txt", b"?"),
        disk={b"app.py": REGULAR, b"lib/util.py": MISSING, b"new.txt": REGULAR},
    )
    contents = {b"app.py": b"app 2\n", b"new.txt": b"new\n"}
    blob = world.store.blob
    changes: dict[bytes, Entry | None] = {
        b"app.py": (REG, blob(b"app 2\n")),
        b"lib/util.py": None,
        b"new.txt": (REG, blob(b"new\n")),
    }
    return seen, contents, changes


class TestWorkingTree:
    def test_a_prefetched_head_is_used_without_reading_it_again(self, world: World) -> None:
        """HEAD's tree comes from the prefetch: only the trees below it are read."""
        seen, contents, changes = dirty(world)
        fake = FakeHelpers(world.store, prefetch=world.head, contents=contents)
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result == (world.expect(changes), world.head_tree)
        assert fake.calls == [
            ("prefetched", world.head),
            ("hash_paths", [b"app.py", b"new.txt"]),
            ("trees", [world.lib_tree]),
        ]

    def test_without_a_prefetch_head_is_read_from_cat_file(self, world: World) -> None:
        """The prefetch read another commit: HEAD's commit is read, then every tree on the way."""
        seen, contents, changes = dirty(world)
        fake = FakeHelpers(world.store, contents=contents)
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result == (world.expect(changes), world.head_tree)
        assert fake.calls == [
            ("prefetched", world.head),
            ("read", [world.head]),
            ("hash_paths", [b"app.py", b"new.txt"]),
            ("trees", [world.head_tree]),
            ("trees", [world.lib_tree]),
        ]

    def test_a_clean_work_tree_is_heads_tree(self, world: World) -> None:
        """Nothing listed: the tree id is HEAD's tree, and nothing is hashed."""
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = working_tree.working_tree_id(seen_of(), world.head, as_helpers(fake))
        assert result == (world.head_tree, world.head_tree)
        assert fake.calls == [("prefetched", world.head), ("hash_paths", [])]

    @pytest.mark.parametrize("prefetch", [True, False])
    def test_a_sha256_repository_gets_sha256_ids(self, prefetch: bool) -> None:
        """A 64-digit HEAD: every id (symlinks too) and tree is SHA-256."""
        world = World.make("sha256")
        assert len(world.head) == 64
        seen, contents, changes = dirty(world)
        seen.records.append((b"new-link", b"?"))
        seen.disk[b"new-link"] = LINK
        seen.links[b"new-link"] = b"run.sh"
        changes[b"new-link"] = (LNK, world.store.blob(b"run.sh"))
        fake = FakeHelpers(
            world.store, prefetch=world.head if prefetch else None, contents=contents
        )
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result == (world.expect(changes), world.head_tree)

    def test_head_that_cat_file_cannot_read_refuses(self, world: World) -> None:
        """HEAD's commit missing from cat-file's answer: no tree id, and it says which."""
        del world.store.objects[world.head]
        fake = FakeHelpers(world.store)
        message = refusal(working_tree.working_tree_id, seen_of(), world.head, as_helpers(fake))
        assert message == f"git cat-file could not read HEAD ({world.head})"

    def test_head_that_is_not_a_commit_refuses(self, world: World) -> None:
        """An object of another type under HEAD's id (even with a commit's body) is refused."""
        world.store.objects[world.head] = (b"blob", world.store.objects[world.head][1])
        fake = FakeHelpers(world.store)
        message = refusal(working_tree.working_tree_id, seen_of(), world.head, as_helpers(fake))
        assert message == f"git cat-file could not read HEAD ({world.head})"

    def test_a_commit_that_does_not_start_with_its_tree_refuses(self, world: World) -> None:
        """A commit body must start with `tree `: anything else is not read as one."""
        body = world.store.objects[world.head][1]
        world.store.objects[world.head] = (b"commit", b"parent " + body)
        fake = FakeHelpers(world.store)
        message = refusal(working_tree.working_tree_id, seen_of(), world.head, as_helpers(fake))
        assert message == f"git cat-file could not read HEAD ({world.head})"

    @pytest.mark.parametrize(
        ("fields", "kind"),
        [(b"2 R. N... 100644 100644 100644 a b R100 old", "b'2'"), (b"!", "b'!'")],
        ids=["rename", "ignored"],
    )
    def test_an_unknown_record_refuses(self, world: World, fields: bytes, kind: str) -> None:
        """A status record kind the capture does not know (renames, ignored): no guess."""
        fake = FakeHelpers(world.store, prefetch=world.head)
        seen = seen_of((b"x", fields), disk={b"x": REGULAR})
        message = refusal(working_tree.working_tree_id, seen, world.head, as_helpers(fake))
        assert message == f"git status gave a record this capture does not know ({kind})"

    def test_a_conflict_is_resolved_with_what_is_on_disk(self, world: World) -> None:
        """`u` records: the file on disk, with the disk's executable bit."""
        fields = b"u UU N... 100644 100644 100644 100644 " + b" ".join([b"a" * 40] * 3)
        seen = seen_of((b"app.py", fields), disk={b"app.py": EXECUTABLE})
        fake = FakeHelpers(world.store, prefetch=world.head, contents={b"app.py": b"merged\n"})
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result[0] == world.expect({b"app.py": (EXE, world.store.blob(b"merged\n"))})
        assert ("trusts_file_mode", None) in fake.calls

    def test_an_untracked_nested_repository_is_a_gitlink(self, world: World) -> None:
        """`? sub/`: the trailing slash is the key, the entry is `sub`, a gitlink."""
        inner = Capture(head="e" * 40, tree="f" * 40, head_tree="f" * 40)
        seen = seen_of((b"sub/", b"?"), disk={b"sub/": DIR}, nested={b"sub/": inner})
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result[0] == world.expect({b"sub": (GITLINK, bytes.fromhex("e" * 40))})

    def test_a_path_removed_from_the_index_but_on_disk_is_added_back(self, world: World) -> None:
        """`git rm --cached` lists `D.` and `?` for one path: the untracked file wins."""
        seen = seen_of(
            (b"app.py", ordinary(b"D.", (REG, ZERO, ZERO), world.blob(b"app.py"), ZERO_ID)),
            (b"app.py", b"?"),
            disk={b"app.py": REGULAR},
        )
        fake = FakeHelpers(world.store, prefetch=world.head, contents={b"app.py": b"kept\n"})
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result[0] == world.expect({b"app.py": (REG, world.store.blob(b"kept\n"))})

    def test_hidden_entries_follow_their_own_rules(self, world: World) -> None:
        """An absent assume-unchanged file is dropped; an absent skip-worktree one keeps its
        index entry (which may differ from HEAD's)."""
        other = world.store.blob(b"index version\n")
        seen = seen_of(
            hidden=[
                (b"app.py", b"hidden:h 100644 " + world.blob(b"app.py").encode()),
                (b"lib/util.py", b"hidden:S 100755 " + other.hex().encode()),
            ],
            disk={b"app.py": MISSING, b"lib/util.py": MISSING},
        )
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result[0] == world.expect({b"app.py": None, b"lib/util.py": (EXE, other)})

    def test_crlf_in_the_index_version_refuses(self, world: World) -> None:
        """A hashed file with a CR whose index blob is CRLF text: no tree id."""
        index_blob = world.store.put(b"blob", b"a\r\nb\r\n")
        seen = seen_of(
            (b"app.py", ordinary(b".M", (REG, REG, REG), index_blob, index_blob)),
            disk={b"app.py": REGULAR},
            carriage=[b"app.py"],
        )
        fake = FakeHelpers(world.store, prefetch=world.head, contents={b"app.py": b"x\r\n"})
        message = refusal(working_tree.working_tree_id, seen, world.head, as_helpers(fake))
        assert message == "app.py" + CRLF_REASON

    def test_crlf_in_a_binary_index_version_is_hashed(self, world: World) -> None:
        """The same with a NUL in the index blob: the file is hashed as usual."""
        index_blob = world.store.put(b"blob", b"a\r\n\0")
        seen = seen_of(
            (b"app.py", ordinary(b".M", (REG, REG, REG), index_blob, index_blob)),
            disk={b"app.py": REGULAR},
            carriage=[b"app.py"],
        )
        fake = FakeHelpers(world.store, prefetch=world.head, contents={b"app.py": b"x\r\n"})
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        assert result[0] == world.expect({b"app.py": (REG, world.store.blob(b"x\r\n"))})
        assert ("read", [index_blob]) in fake.calls

    def test_paths_the_line_protocol_cannot_carry_are_hashed_one_by_one(self, world: World) -> None:
        """A newline, CR or leading quote in a name: `hash_one`; the rest in one batch."""
        names = [b"a\nb.txt", b"c\rd.txt", b'"q".txt']
        seen = seen_of(
            *[(name, b"?") for name in [*names, b"plain.txt"]],
            disk=dict.fromkeys([*names, b"plain.txt"], REGULAR),
        )
        contents = {name: name + b"\n" for name in [*names, b"plain.txt"]}
        fake = FakeHelpers(world.store, prefetch=world.head, contents=contents)
        result = working_tree.working_tree_id(seen, world.head, as_helpers(fake))
        blob = world.store.blob
        assert result[0] == world.expect({n: (REG, blob(n + b"\n")) for n in contents})
        assert fake.calls[1:] == [
            ("hash_paths", [b"plain.txt"]),
            ("hash_one", b"a\nb.txt"),
            ("hash_one", b"c\rd.txt"),
            ("hash_one", b'"q".txt'),
        ]

    def test_a_hash_that_is_not_an_object_id_refuses(self, world: World) -> None:
        """hash-object printing garbage: no tree id, never a guessed one."""
        seen = seen_of((b"new.txt", b"?"), disk={b"new.txt": REGULAR})
        fake = FakeHelpers(world.store, prefetch=world.head, ids={b"new.txt": "fatal: no"})
        message = refusal(working_tree.working_tree_id, seen, world.head, as_helpers(fake))
        assert message == "git hash-object gave no object id"

    def test_a_tree_that_cannot_be_read_refuses_with_the_builders_reason(
        self, world: World
    ) -> None:
        """A missing tree on a changed path: the builder's TreeError becomes the reason."""
        del world.store.objects[world.lib_tree]
        seen, contents, _ = dirty(world)
        fake = FakeHelpers(world.store, prefetch=world.head, contents=contents)
        message = refusal(working_tree.working_tree_id, seen, world.head, as_helpers(fake))
        assert message == f"the tree {world.lib_tree} could not be read"


# -- a small real repository for Helpers -------------------------------------------------------


@dataclass
class Shared:
    """A committed repository the Helpers tests only read (one per module)."""

    root: Path
    env: dict[str, str]
    head: str
    head_tree: str
    lib_tree: str
    commit_body: bytes
    tree_body: bytes
    blobs: dict[bytes, str] = field(default_factory=dict)

    @property
    def base(self) -> list[str]:
        return ["git", f"--work-tree={self.root}", *capture._PINNED]

    def helpers(self) -> working_tree.Helpers:
        return working_tree.Helpers(self.base, str(self.root), self.env)


SHARED_FILES = {
    b"app.py": b"print('hello')\n",
    b"run.sh": b"#!/bin/sh\necho run\n",
    b"lib/util.py": b"def util():\n    return 1\n",
    b".gitattributes": b"*.crlf text\n",
    b"w.crlf": b"a\r\nb\r\n",
}


def git_bytes(cwd: Path, *args: str, env: Mapping[str, str]) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    tmp = tmp_path_factory.mktemp("shared")
    env = base_env(tmp)
    root = make_repo(tmp / "repo", env)
    for name, data in SHARED_FILES.items():
        path = root / os.fsdecode(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("app.py")
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "-m", "files", env=env)
    blobs = {
        name: git(root, "rev-parse", f"HEAD:{os.fsdecode(name)}", env=env) for name in SHARED_FILES
    }
    return Shared(
        root=root,
        env=env,
        head=git(root, "rev-parse", "HEAD", env=env),
        head_tree=git(root, "rev-parse", "HEAD^{tree}", env=env),
        lib_tree=git(root, "rev-parse", "HEAD:lib", env=env),
        commit_body=git_bytes(root, "cat-file", "commit", "HEAD", env=env),
        tree_body=git_bytes(root, "cat-file", "tree", "HEAD^{tree}", env=env),
        blobs=blobs,
    )


@pytest.fixture
def helpers(shared: Shared) -> Iterator[working_tree.Helpers]:
    made = shared.helpers()
    made.prefetch.join()
    yield made
    made.close()


def blob_hex(data: bytes) -> str:
    return tree_id.object_id(b"blob", data).hex()


class RecordingPipe:
    """A pipe wrapper that records each write (to see how requests are batched)."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.writes.append(data)
        return int(self.pipe.write(data))

    def flush(self) -> None:
        self.pipe.flush()

    def close(self) -> None:
        self.pipe.close()


def answer_with(
    monkeypatch: pytest.MonkeyPatch, helpers: working_tree.Helpers, answer: bytes
) -> None:
    """Replace cat-file by pipes that answer `answer` (the real process is reaped first)."""
    working_tree._reap(helpers.objects)
    monkeypatch.setattr(helpers.objects, "stdin", io.BytesIO())
    monkeypatch.setattr(helpers.objects, "stdout", io.BytesIO(answer))


def hasher_running(
    monkeypatch: pytest.MonkeyPatch, helpers: working_tree.Helpers, script: str
) -> None:
    """Replace hash-object by a shell script with the same pipes (the real one is reaped)."""
    working_tree._reap(helpers.hasher)
    fake = subprocess.Popen(
        ["sh", "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    monkeypatch.setattr(helpers, "hasher", fake)


def shared_prefix() -> tuple[str, tuple[bytes, bytes]]:
    """Two blobs whose ids start with the same four hex digits (a short name for both)."""
    seen: dict[str, bytes] = {}
    for number in range(100_000):
        data = b"%d\n" % number
        prefix = blob_hex(data)[:4]
        if prefix in seen:
            return prefix, (seen[prefix], data)
        seen[prefix] = data
    raise AssertionError


def kept(helpers: working_tree.Helpers) -> tuple[str, bytes, str, tree_id.ParsedTree] | None:
    """What the prefetch kept (read through a call, so a type checker does not narrow it)."""
    return helpers.head


class TestRead:
    def test_present_objects_are_answered_and_missing_ones_left_out(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """Each request maps to (id, type, body); a missing name anywhere is skipped."""
        app = shared.blobs[b"app.py"]
        found = helpers.read([ZERO_ID, shared.head, "HEAD:nope", shared.head_tree, app, "HEAD"])
        assert found == {
            shared.head: (shared.head, b"commit", shared.commit_body),
            shared.head_tree: (shared.head_tree, b"tree", shared.tree_body),
            app: (app, b"blob", SHARED_FILES[b"app.py"]),
            "HEAD": (shared.head, b"commit", shared.commit_body),
        }

    def test_nothing_asked_reads_nothing(self, helpers: working_tree.Helpers) -> None:
        """An empty request is an empty answer."""
        assert helpers.read([]) == {}

    def test_requests_go_in_batches(
        self, shared: Shared, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """_BATCH names per write, each batch's answers read before the next is asked."""
        monkeypatch.setattr(working_tree, "_BATCH", 2)
        recorder = RecordingPipe(helpers.objects.stdin)
        monkeypatch.setattr(helpers.objects, "stdin", recorder)
        names = [shared.head, shared.head_tree, shared.lib_tree, shared.blobs[b"run.sh"], "HEAD"]
        found = helpers.read(names)
        assert sorted(found) == sorted(names)
        assert found[shared.lib_tree][1] == b"tree"
        assert found[shared.blobs[b"run.sh"]][2] == SHARED_FILES[b"run.sh"]
        assert recorder.writes == [
            f"{shared.head}\n{shared.head_tree}\n".encode(),
            f"{shared.lib_tree}\n{shared.blobs[b'run.sh']}\n".encode(),
            b"HEAD\n",
        ]

    def test_an_ambiguous_name_is_not_an_answer(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """cat-file's `<name> ambiguous` is neither an object nor `missing`: refused."""
        prefix, pair = shared_prefix()
        for data in pair:
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=shared.root,
                env=shared.env,
                input=data,
                capture_output=True,
                check=True,
            )
        assert refusal(helpers.read, [prefix]) == "git cat-file stopped answering"

    def test_a_truncated_answer_is_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A body shorter than its header says: cat-file stopped answering."""
        answer_with(monkeypatch, helpers, f"{ZERO_ID} blob 10\nabc".encode())
        assert refusal(helpers.read, [ZERO_ID]) == "git cat-file stopped answering"

    def test_an_answer_without_its_newline_is_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The body and its newline, no less: one byte short is refused."""
        answer_with(monkeypatch, helpers, f"{ZERO_ID} blob 3\nabc".encode())
        assert refusal(helpers.read, [ZERO_ID]) == "git cat-file stopped answering"

    def test_an_exact_answer_from_a_stand_in_is_read(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Header, body and newline exactly: the body without its newline."""
        answer_with(monkeypatch, helpers, f"{ZERO_ID} blob 3\nabc\n".encode())
        assert helpers.read(["x"]) == {"x": (ZERO_ID, b"blob", b"abc")}

    def test_no_answer_at_all_is_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """End of output where a header was due: cat-file stopped answering."""
        answer_with(monkeypatch, helpers, b"")
        assert refusal(helpers.read, [ZERO_ID]) == "git cat-file stopped answering"

    def test_a_header_with_a_bad_size_is_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A size that is not a number: cat-file failed, with the parse error."""
        answer_with(monkeypatch, helpers, f"{ZERO_ID} blob xx\n".encode())
        message = refusal(helpers.read, [ZERO_ID])
        assert message == "git cat-file failed (invalid literal for int() with base 10: b'xx')"

    def test_a_dead_cat_file_is_refused(self, helpers: working_tree.Helpers) -> None:
        """cat-file killed (the watchdog, say): writing to it fails, and that is the reason."""
        helpers.objects.kill()
        helpers.objects.wait()
        assert refusal(helpers.read, ["HEAD"]) == "git cat-file failed ([Errno 32] Broken pipe)"

    def test_a_closed_helper_is_refused(self, helpers: working_tree.Helpers) -> None:
        """After close, a read is refused, not an exception of another kind."""
        helpers.close()
        assert refusal(helpers.read, ["HEAD"]) == "git cat-file failed (write to closed file)"


class TestTrees:
    def test_only_trees_are_returned_by_raw_id(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """`trees` answers tree bodies by raw id; blobs and missing ids are left out."""
        root, lib = bytes.fromhex(shared.head_tree), bytes.fromhex(shared.lib_tree)
        asked = [root, bytes.fromhex(shared.blobs[b"app.py"]), bytes(20), lib]
        found = helpers.trees(asked)
        assert found == {
            root: shared.tree_body,
            lib: git_bytes(shared.root, "cat-file", "tree", shared.lib_tree, env=shared.env),
        }


class TestPrefetch:
    def test_heads_tree_is_ready_for_that_head(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """The prefetch read HEAD's commit and parsed its tree; `prefetched` gives the tree."""
        assert helpers.head is not None
        commit, body, tree, parsed = helpers.head
        assert (commit, body, tree) == (shared.head, shared.commit_body, shared.head_tree)
        assert parsed.body == shared.tree_body
        early = helpers.prefetched(shared.head)
        assert early is not None
        assert early[0] == shared.head_tree
        assert early[1] is parsed

    def test_another_head_gets_nothing(self, helpers: working_tree.Helpers) -> None:
        """HEAD moved since the prefetch: its tree is not used."""
        assert helpers.prefetched("1" * 40) is None

    def test_a_commit_that_does_not_name_that_tree_gets_nothing(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """HEAD moved between the prefetch's two lookups: the tree is not that commit's."""
        assert helpers.head is not None
        _, body, tree, parsed = helpers.head
        other = body.replace(shared.head_tree.encode(), b"1" * 40)
        helpers.head = (shared.head, other, tree, parsed)
        assert helpers.prefetched(shared.head) is None
        helpers.head = (shared.head, b"tree " + tree.encode() + b"0\n", tree, parsed)
        assert helpers.prefetched(shared.head) is None

    def test_the_prefetch_is_waited_for_at_most_the_git_timeout(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`prefetched` joins the prefetch thread with GIT_TIMEOUT, never without a bound."""
        joins: list[float | None] = []
        waiting = types.SimpleNamespace(join=joins.append)
        monkeypatch.setattr(helpers, "prefetch", waiting)
        helpers.prefetched("1" * 40)
        assert joins == [working_tree.GIT_TIMEOUT]

    def test_an_unborn_head_prefetches_nothing(self, tmp_path: Path, env: dict[str, str]) -> None:
        """No commit yet: the prefetch finds nothing and `prefetched` says so."""
        root = tmp_path / "unborn"
        root.mkdir()
        git(root, "init", "-q", env=env)
        made = working_tree.Helpers(["git", f"--work-tree={root}"], str(root), env)
        try:
            assert made.prefetched("1" * 40) is None
            assert made.head is None
        finally:
            made.close()

    @pytest.mark.parametrize(
        "case",
        [
            (b"commit", b"tree", "HEAD"),
            (b"commit", b"tree", "HEAD^{tree}"),
            (b"tag", b"tree", None),
            (b"commit", b"blob", None),
        ],
    )
    def test_answers_that_are_not_a_commit_and_its_tree_are_not_kept(
        self,
        shared: Shared,
        helpers: working_tree.Helpers,
        monkeypatch: pytest.MonkeyPatch,
        case: tuple[bytes, bytes, str | None],
    ) -> None:
        """The prefetch keeps HEAD only when both answers came, as a commit and a tree."""
        commit_kind, tree_kind, drop = case
        answers = {
            "HEAD": (shared.head, commit_kind, shared.commit_body),
            "HEAD^{tree}": (shared.head_tree, tree_kind, shared.tree_body),
        }
        answers.pop(drop or "", None)
        asked: list[list[str]] = []

        def read(requests: list[str]) -> dict[str, tuple[str, bytes, bytes]]:
            asked.append(requests)
            return answers

        monkeypatch.setattr(helpers, "read", read)
        helpers.head = None
        helpers._prefetch()
        assert helpers.head is None
        assert asked == [["HEAD", "HEAD^{tree}"]]

    def test_the_prefetch_keeps_exactly_what_it_read(
        self, shared: Shared, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """(commit id, commit body, tree id, the tree parsed at the ids' width)."""
        answers = {
            "HEAD": (shared.head, b"commit", shared.commit_body),
            "HEAD^{tree}": (shared.head_tree, b"tree", shared.tree_body),
        }
        monkeypatch.setattr(helpers, "read", lambda _requests: answers)
        helpers.head = None
        helpers._prefetch()
        head = kept(helpers)
        assert head is not None
        assert head[:3] == (shared.head, shared.commit_body, shared.head_tree)
        assert head[3].body == shared.tree_body
        assert head[3].extra == 22

    def test_a_malformed_tree_is_not_kept(
        self, shared: Shared, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A tree body git's format cannot parse: nothing is prefetched."""
        answers = {
            "HEAD": (shared.head, b"commit", shared.commit_body),
            "HEAD^{tree}": (shared.head_tree, b"tree", b"100644 broken"),
        }
        monkeypatch.setattr(helpers, "read", lambda _requests: answers)
        helpers.head = None
        helpers._prefetch()
        assert helpers.head is None

    def test_a_refused_read_is_not_kept(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """cat-file failing during the prefetch leaves nothing prefetched, and no error."""
        answer_with(monkeypatch, helpers, b"")
        helpers.head = None
        helpers._prefetch()
        assert helpers.head is None


class TestHashing:
    def test_fed_paths_and_the_rest_are_hashed_once_each(
        self, shared: Shared, helpers: working_tree.Helpers
    ) -> None:
        """Paths fed early are not sent again; the rest go once each (duplicates too)."""
        helpers.feed(b"app.py")
        assert helpers.fed == [b"app.py"]
        ids = helpers.hash_paths([b"run.sh", b"app.py", b"lib/util.py", b"run.sh", b"w.crlf"])
        assert ids == {
            b"app.py": shared.blobs[b"app.py"],
            b"run.sh": shared.blobs[b"run.sh"],
            b"lib/util.py": shared.blobs[b"lib/util.py"],
            b"w.crlf": shared.blobs[b"w.crlf"],
        }
        assert shared.blobs[b"w.crlf"] == blob_hex(b"a\nb\n")  # the attributes applied

    def test_nothing_to_hash(self, helpers: working_tree.Helpers) -> None:
        """No path: an empty answer, not a failure."""
        assert helpers.hash_paths([]) == {}

    def test_only_the_first_early_paths_are_fed(
        self, shared: Shared, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """_EARLY paths are fed while the digest runs; the next ones wait for hash_paths."""
        monkeypatch.setattr(working_tree, "_EARLY", 2)
        for path in (b"app.py", b"run.sh", b"lib/util.py"):
            helpers.feed(path)
        assert helpers.fed == [b"app.py", b"run.sh"]
        ids = helpers.hash_paths([b"app.py", b"run.sh", b"lib/util.py"])
        assert ids == {name: shared.blobs[name] for name in (b"app.py", b"run.sh", b"lib/util.py")}

    def test_a_path_the_line_protocol_cannot_carry_is_not_fed(
        self, helpers: working_tree.Helpers
    ) -> None:
        """A newline, CR or leading quote: the path is left for `hash_one`."""
        for path in (b"a\nb", b"a\rb", b'"q"'):
            helpers.feed(path)
        assert helpers.fed == []

    def test_a_dead_hasher_is_not_fed_and_fails_the_hash(
        self, helpers: working_tree.Helpers
    ) -> None:
        """Feeding a killed hash-object fails quietly; hash_paths then refuses, naming the error."""
        helpers.hasher.kill()
        helpers.hasher.wait()
        helpers.feed(b"app.py")
        assert helpers.fed == []
        message = refusal(helpers.hash_paths, [b"app.py"])
        assert message == "git hash-object failed (BrokenPipeError)"

    def test_a_vanished_file_is_refused_with_gits_first_line_clipped(
        self, helpers: working_tree.Helpers
    ) -> None:
        """hash-object cannot open a listed file: refused, with its error's first line."""
        name = b"caf\xe9-" + b"x" * 230 + b".txt"
        message = refusal(helpers.hash_paths, [b"app.py", name])
        line = f"fatal: could not open '{name.decode('utf-8', 'replace')}' for reading: "
        line += "No such file or directory"
        assert message == UNHASHED + ": " + line[:200]

    def test_too_few_ids_from_a_successful_hasher_are_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """One id for two paths, exit 0, nothing on stderr: refused without detail."""
        hasher_running(monkeypatch, helpers, f"cat >/dev/null; echo {ZERO_ID}")
        assert refusal(helpers.hash_paths, [b"a", b"b"]) == UNHASHED

    def test_a_failing_hasher_is_refused_even_with_every_id(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Exit 1 with one id per path: refused, with the first stderr line."""
        script = f"cat >/dev/null; echo {ZERO_ID}; echo oops >&2; echo more >&2; exit 1"
        hasher_running(monkeypatch, helpers, script)
        assert refusal(helpers.hash_paths, [b"a"]) == UNHASHED + ": oops"

    def test_garbage_from_the_hasher_is_passed_on_decoded(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Bytes that are not ASCII become replacement characters, for the caller to refuse."""
        hasher_running(monkeypatch, helpers, r"cat >/dev/null; printf '\377\376\n'")
        assert helpers.hash_paths([b"a"]) == {b"a": "\ufffd\ufffd"}

    def test_a_hung_hasher_is_refused_after_the_timeout(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """hash-object that never answers: refused after GIT_TIMEOUT, naming the timeout."""
        hasher_running(monkeypatch, helpers, "sleep 2")
        monkeypatch.setattr(working_tree, "GIT_TIMEOUT", 0.1)
        message = refusal(helpers.hash_paths, [b"a"])
        assert message == "git hash-object failed (TimeoutExpired)"

    def test_a_closed_hasher_is_refused(self, helpers: working_tree.Helpers) -> None:
        """After close: refused, naming the error."""
        helpers.close()
        assert refusal(helpers.hash_paths, [b"app.py"]) == "git hash-object failed (ValueError)"


class TestHashOne:
    @pytest.mark.parametrize(
        "name", ["x\ny.crlf", "c\rd.txt", '"q".crlf'], ids=["newline", "cr", "leading-quote"]
    )
    def test_is_what_git_hash_object_gives_for_that_path(
        self, shared: Shared, helpers: working_tree.Helpers, name: str
    ) -> None:
        """The id of the file's bytes as git stores them at that path (attributes apply)."""
        (shared.root / name).write_bytes(b"one\r\ntwo\r\n")
        try:
            expected = git(shared.root, "hash-object", f"--path={name}", name, env=shared.env)
            assert helpers.hash_one(name.encode()) == expected
        finally:
            (shared.root / name).unlink()
        assert expected == blob_hex(b"one\ntwo\n" if name.endswith("crlf") else b"one\r\ntwo\r\n")

    def test_a_file_that_cannot_be_read_is_refused(self, helpers: working_tree.Helpers) -> None:
        """A listed file gone before it is read: refused."""
        assert refusal(helpers.hash_one, b"gone\n") == UNREADABLE

    def test_a_failing_git_is_refused(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """git exiting non-zero: the file could not be hashed."""
        monkeypatch.setattr(helpers, "base", ["git", "--no-such-option"])
        assert refusal(helpers.hash_one, b"app.py") == "a listed file could not be hashed"

    def test_garbage_output_is_passed_on_decoded_and_stripped(
        self, helpers: working_tree.Helpers, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Bytes that are not ASCII become replacement characters, for the caller to refuse."""
        script = r"cat >/dev/null; printf ' \377abc\n'"
        monkeypatch.setattr(helpers, "base", ["sh", "-c", script, "sh"])
        assert helpers.hash_one(b"app.py") == "\ufffdabc"


class TestFileMode:
    def helpers_for(
        self, root: Path, env: dict[str, str], setting: str | None
    ) -> working_tree.Helpers:
        root.mkdir()
        git(root, "init", "-q", env=env)
        if setting is not None:
            git(root, "config", "core.fileMode", setting, env=env)
        made = working_tree.Helpers(["git", f"--work-tree={root}"], str(root), env)
        made.prefetch.join()
        return made

    @pytest.mark.parametrize(("setting", "expected"), [(None, True), ("true", True)])
    def test_file_mode_is_trusted_by_default(
        self, tmp_path: Path, env: dict[str, str], setting: str | None, expected: bool
    ) -> None:
        """core.fileMode unset or true: the executable bit counts."""
        made = self.helpers_for(tmp_path / "r", env, setting)
        try:
            assert made.trusts_file_mode() is expected
        finally:
            made.close()

    def test_file_mode_false_is_read_once_and_kept(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """core.fileMode false: not trusted; the answer is cached for the capture."""
        root = tmp_path / "r"
        made = self.helpers_for(root, env, "false")
        try:
            assert made.trusts_file_mode() is False
            git(root, "config", "core.fileMode", "true", env=env)
            assert made.trusts_file_mode() is False
        finally:
            made.close()


class TestHelpersLifecycle:
    def test_the_environment_reaches_every_git_it_runs(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """GIT_DIR, and the config it brings (autocrlf, fileMode), from the given env only."""
        gitdir = tmp_path / "store"
        git(tmp_path, "init", "-q", str(gitdir), env=env)
        for key, value in (("core.autocrlf", "true"), ("core.fileMode", "false")):
            git(gitdir, "config", key, value, env=env)
        work = tmp_path / "work"
        work.mkdir()
        (work / "c.txt").write_bytes(b"x\r\ny\r\n")
        split = {**env, "GIT_DIR": str(gitdir / ".git")}
        stored = git(work, "hash-object", "-w", "c.txt", env=split)
        made = working_tree.Helpers(["git", f"--work-tree={work}"], str(work), split)
        made.prefetch.join()
        try:
            assert made.read([stored]) == {stored: (stored, b"blob", b"x\ny\n")}
            assert made.hash_one(b"c.txt") == stored
            made.feed(b"c.txt")
            assert made.hash_paths([b"c.txt"]) == {b"c.txt": stored}
            assert made.trusts_file_mode() is False
        finally:
            made.close()

    def test_nothing_git_says_reaches_our_stderr(
        self, shared: Shared, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """Kills `__init__` 13, 19 (cat-file's stderr no longer DEVNULL): cat-file's and
        hash-object's stderr never reach the capturing process's own."""
        traced = {**shared.env, "GIT_TRACE": "1"}
        made = working_tree.Helpers(shared.base, str(shared.root), traced)
        try:
            made.prefetch.join()
            assert made.read([shared.head_tree])[shared.head_tree][1] == b"tree"
            made.feed(b"app.py")
            assert made.hash_paths([b"run.sh"]) == {
                b"app.py": shared.blobs[b"app.py"],
                b"run.sh": shared.blobs[b"run.sh"],
            }
        finally:
            made.close()
        assert capfd.readouterr().err == ""

    def test_close_kills_both_and_can_be_repeated(self, shared: Shared) -> None:
        """close kills and reaps cat-file and hash-object, stops the watchdog, and is idempotent."""
        made = shared.helpers()
        made.prefetch.join()
        made.close()
        made.close()
        assert made.objects.returncode == -signal.SIGKILL
        assert made.hasher.returncode == -signal.SIGKILL
        assert made.timer.finished.is_set()

    def test_the_watchdog_closes_a_helper_that_outlives_the_timeout(
        self, shared: Shared, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After GIT_TIMEOUT the watchdog kills both processes, so nothing can hang on them."""
        monkeypatch.setattr(working_tree, "GIT_TIMEOUT", 0.3)
        made = shared.helpers()
        try:
            made.prefetch.join()
            made.timer.join(5)
            assert made.objects.returncode == -signal.SIGKILL
            assert made.hasher.returncode == -signal.SIGKILL
        finally:
            made.close()

    def test_threads_do_not_keep_the_process_alive(self, helpers: working_tree.Helpers) -> None:
        """The watchdog and the prefetch are daemon threads."""
        assert helpers.timer.daemon is True
        assert isinstance(helpers.prefetch, threading.Thread)
        assert helpers.prefetch.daemon is True

    def test_a_hasher_that_cannot_start_takes_cat_file_down_with_it(
        self, shared: Shared, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If hash-object fails to start, the cat-file already started is killed and reaped."""
        started: list[subprocess.Popen[bytes]] = []
        real = subprocess.Popen

        def popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
            if "hash-object" in argv:
                raise FileNotFoundError(2, "no hash-object")
            process: subprocess.Popen[bytes] = real(argv, **kwargs)
            started.append(process)
            return process

        monkeypatch.setattr(subprocess, "Popen", popen)
        with pytest.raises(FileNotFoundError, match="no hash-object"):
            shared.helpers()
        assert len(started) == 1
        assert started[0].returncode == -signal.SIGKILL
        assert started[0].stdin is not None
        assert started[0].stdin.closed


# -- _finish, called directly ------------------------------------------------------------------


def finish(
    root: Path,
    stdout: bytes,
    fake: FakeHelpers | working_tree.Helpers,
    *,
    env: Mapping[str, str] | None = None,
    returncode: int = 0,
    stderr: bytes = b"",
    listed: int | None = 0,
    flags: bytes = b"",
    base: list[str] | None = None,
    exclude: str | None = None,
    depth: int = 0,
    started: float | None = None,
) -> Capture:
    proc = subprocess.CompletedProcess(["git"], returncode, stdout, stderr)
    helpers = as_helpers(fake) if isinstance(fake, FakeHelpers) else fake
    env = env if env is not None else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return capture._finish(
        proc,
        listed=listed,
        flags=flags,
        helpers=helpers,
        base=base if base is not None else ["git", f"--work-tree={root}"],
        root=str(root),
        env=env,
        git_env=env,
        exclude=exclude,
        depth=depth,
        started=time.monotonic() if started is None else started,
    )


def status(head: str, *records: bytes) -> bytes:
    return b"\0".join([b"# branch.oid " + head.encode(), b"# branch.head main", *records]) + b"\0"


class TestFinishFailures:
    def test_not_a_repository(self, tmp_path: Path, world: World) -> None:
        """git's "not a git repository" becomes the plain reason."""
        stderr = b"fatal: not a git repository (or any parent up to mount point /)\nmore\n"
        result = finish(tmp_path, b"", FakeHelpers(world.store), returncode=128, stderr=stderr)
        assert result.reason == "the workspace is not a git repository"
        assert (result.digest, result.tree, result.tree_reason) == (None, None, None)

    def test_status_failing_gives_its_first_line(self, tmp_path: Path, world: World) -> None:
        """Exit 1: the reason is the first line of git's stderr."""
        stderr = b"\n  fatal: index file corrupt\nsecond line\n"
        result = finish(tmp_path, b"", FakeHelpers(world.store), returncode=1, stderr=stderr)
        assert result.reason == "git status failed: fatal: index file corrupt"

    def test_a_long_first_line_is_clipped(self, tmp_path: Path, world: World) -> None:
        """At most 300 characters of it, undecodable bytes replaced."""
        stderr = b"fatal: caf\xe9 " + b"y" * 400
        result = finish(tmp_path, b"", FakeHelpers(world.store), returncode=2, stderr=stderr)
        assert result.reason == "git status failed: " + ("fatal: caf\ufffd " + "y" * 400)[:300]

    @pytest.mark.parametrize(("returncode", "listed", "code"), [(0, 1, 1), (3, 0, 3), (1, 5, 1)])
    def test_a_silent_failure_gives_the_exit_code(
        self, tmp_path: Path, world: World, returncode: int, listed: int | None, code: int
    ) -> None:
        """Nothing on stderr: the exit code of whichever git failed."""
        result = finish(
            tmp_path, b"", FakeHelpers(world.store), returncode=returncode, listed=listed
        )
        assert result.reason == f"git status failed: exit {code}"

    def test_ls_files_failing_on_hidden_entries(self, tmp_path: Path, world: World) -> None:
        """Hidden entries whose index entries cannot be listed: no capture."""
        result = finish(
            tmp_path,
            status(world.head),
            FakeHelpers(world.store, prefetch=world.head),
            flags=b"H a\0S b\0",
            base=["git", "--no-such-option"],
        )
        assert result.reason == "git ls-files failed on entries git status does not look at"


class TestFinishTree:
    def test_the_tree_part_of_a_capture(self, tmp_path: Path, world: World) -> None:
        """tree and head_tree from the plan; files the digest read are fed to the hasher."""
        (tmp_path / "new.txt").write_bytes(b"new\n")
        (tmp_path / "app.py").write_bytes(b"app 2\n")
        records = [
            b"1 .M N... 100644 100644 100644 "
            + f"{world.blob(b'app.py')} {world.blob(b'app.py')} app.py".encode(),
            b"? new.txt",
        ]
        fake = FakeHelpers(
            world.store,
            prefetch=world.head,
            contents={b"app.py": b"app 2\n", b"new.txt": b"new\n"},
        )
        result = finish(tmp_path, status(world.head, *records), fake)
        blob = world.store.blob
        assert result.tree == world.expect(
            {b"app.py": (REG, blob(b"app 2\n")), b"new.txt": (REG, blob(b"new\n"))}
        )
        assert result.head_tree == world.head_tree
        assert result.tree_reason is None
        assert result.changed == ["app.py", "new.txt"]
        assert [call for call in fake.calls if call[0] == "feed"] == [
            ("feed", b"app.py"),
            ("feed", b"new.txt"),
        ]

    def test_a_refusal_becomes_the_tree_reason_clipped(self, tmp_path: Path, world: World) -> None:
        """No tree id: tree and head_tree stay None, the reason (first 500 characters) says why."""
        long = "d" * 200 + "/" + "e" * 200 + "/" + "f" * 150
        (tmp_path / long).mkdir(parents=True)
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = finish(tmp_path, status(world.head, b"? " + long.encode() + b"/"), fake)
        assert result.digest is not None
        assert (result.tree, result.head_tree) == (None, None)
        assert result.tree_reason == (long + " is a directory where git lists a file")[:500]

    def test_an_unborn_head_has_no_tree(self, tmp_path: Path, world: World) -> None:
        """No commit: digest_status gives no head at depth 0, and the tree reason says why."""
        stdout = b"# branch.oid (initial)\0# branch.head main\0"
        fake = FakeHelpers(world.store)
        result = finish(tmp_path, stdout, fake)
        assert result.reason == "the repository has no commit yet (HEAD is unborn)"
        assert result.tree_reason == "the repository has no commit yet"
        assert result.tree is None
        assert fake.calls == []

    def test_an_unborn_nested_head_has_no_tree(self, tmp_path: Path, world: World) -> None:
        """Nested (depth 1), an unborn HEAD is `unborn`: bound, but no tree id."""
        stdout = b"# branch.oid (initial)\0# branch.head main\0"
        fake = FakeHelpers(world.store)
        result = finish(tmp_path, stdout, fake, depth=1)
        assert result.head == "unborn"
        assert result.digest is not None
        assert result.tree_reason == "the repository has no commit yet"
        assert fake.calls == []

    def test_seconds_are_rounded_and_a_slow_capture_warns(
        self, tmp_path: Path, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """seconds since `started`, to 4 places; over SLOW_CAPTURE, the stale-index warning."""
        monkeypatch.setattr(capture, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = finish(tmp_path, status(world.head), fake, started=87.654321)
        assert result.seconds == 12.3457
        assert result.warning == (
            "capturing the work tree took 12.3 s, probably because git's index is stale (files "
            "touched since git last saved it); cortex never writes .git, so run "
            "`git update-index --refresh` (or any plain `git status`) once to make it fast again"
        )

    def test_exactly_the_slow_threshold_does_not_warn(
        self, tmp_path: Path, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The warning is for more than SLOW_CAPTURE seconds, not for exactly that."""
        monkeypatch.setattr(capture, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
        fake = FakeHelpers(world.store, prefetch=world.head)
        result = finish(tmp_path, status(world.head), fake, started=100.0 - capture.SLOW_CAPTURE)
        assert result.seconds == capture.SLOW_CAPTURE
        assert result.warning is None

    def test_the_case_store_is_left_out_of_the_tree(self, tmp_path: Path, world: World) -> None:
        """`exclude`: the store's own untracked files are neither changed nor in the tree."""
        name = "store/task_01ARZ3NDEKTSV4RRFFQ69G5FAV/case.json"
        (tmp_path / name).parent.mkdir(parents=True)
        (tmp_path / name).write_bytes(b"{}")
        fake = FakeHelpers(world.store, prefetch=world.head, contents={name.encode(): b"{}"})
        stdout = status(world.head, b"? " + name.encode())
        result = finish(tmp_path, stdout, fake, exclude=str(tmp_path / "store"))
        assert (result.changed, result.tree) == ([], world.head_tree)
        result = finish(tmp_path, stdout, fake)
        assert result.changed == [name]
        assert result.tree == world.expect({name.encode(): (REG, world.store.blob(b"{}"))})

    def test_a_nested_repository_that_cannot_be_captured(
        self, tmp_path: Path, world: World, env: dict[str, str]
    ) -> None:
        """At the top, the nested repository's failure is the reason; nested, it propagates."""
        root = tmp_path / "root"
        (root / "inner").mkdir(parents=True)
        (root / "inner" / ".git").write_text("gitdir: /nonexistent/x\n")
        stdout = status(world.head, b"? inner/")
        with pytest.raises(capture._NestedError) as info:
            capture.digest_status(stdout, str(root), env=env)
        fake = FakeHelpers(world.store, prefetch=world.head)
        assert finish(root, stdout, fake, env=env).reason == str(info.value)
        with pytest.raises(capture._NestedError) as again:
            finish(root, stdout, fake, env=env, depth=1)
        assert str(again.value) == str(info.value)

    def test_hidden_entries_are_listed_with_their_index_entries(self, shared: Shared) -> None:
        """Flagged entries get `tag mode blob` from ls-files -s, `? ?` when it has none."""
        flags = b"H app.py\0S lib/util.py\0h ghost.txt\0"
        made = shared.helpers()
        try:
            result = finish(
                shared.root, status(shared.head), made, env=shared.env, flags=flags,
                base=shared.base,
            )  # fmt: skip
        finally:
            made.close()
        hidden = [
            (b"lib/util.py", b"S 100644 " + shared.blobs[b"lib/util.py"].encode()),
            (b"ghost.txt", b"h ? ?"),
        ]
        expected = capture.digest_status(
            status(shared.head), str(shared.root), env=shared.env, hidden=hidden
        )
        assert result.digest == expected.digest
        assert result.changed == ["ghost.txt"]
        assert (result.tree, result.head_tree) == (shared.head_tree, shared.head_tree)
        assert made.fed == []

    def test_the_digest_feeds_the_real_hasher(self, shared: Shared) -> None:
        """A listed regular file is fed to hash-object as the digest reads it."""
        app = shared.blobs[b"app.py"]
        record = f"1 .M N... 100644 100644 100644 {app} {app} app.py".encode()
        made = shared.helpers()
        try:
            result = finish(shared.root, status(shared.head, record), made, env=shared.env)
        finally:
            made.close()
        assert made.fed == [b"app.py"]
        assert (result.tree, result.head_tree) == (shared.head_tree, shared.head_tree)


# -- capture, end to end on tiny real repositories ---------------------------------------------


def add_all_tree(repo: Path, env: dict[str, str], tmp: Path) -> str:
    """What `git add -A && git write-tree` gives, on a copy of the index."""
    index = tmp / "index-copy"
    shutil.copy(repo / ".git" / "index", index)
    quiet = {**env, "GIT_INDEX_FILE": str(index), "GIT_OPTIONAL_LOCKS": "0"}
    git(repo, "add", "-A", env=quiet)
    return git(repo, "write-tree", env=quiet)


class TestCapture:
    def test_a_clean_repository_is_its_heads_tree(self, shared: Shared) -> None:
        """Nothing uncommitted: tree == head_tree == HEAD^{tree}, and no warning."""
        result = capture.capture(str(shared.root), shared.env)
        assert (result.tree, result.head_tree) == (shared.head_tree, shared.head_tree)
        assert result.tree_reason is None
        assert result.warning is None
        assert result.seconds == round(result.seconds, 4)
        assert 0 < result.seconds < 60

    @pytest.mark.parametrize("algorithm", ["sha1", "sha256"])
    def test_a_dirty_repository_is_what_git_add_would_write(
        self, tmp_path: Path, env: dict[str, str], algorithm: str
    ) -> None:
        """Edits at the root and below, a deletion, new files and a symlink: git's own tree."""
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q", f"--object-format={algorithm}", env=env)
        for name, data in SHARED_FILES.items():
            (repo / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            (repo / os.fsdecode(name)).write_bytes(data)
        git(repo, "add", "-A", env=env)
        git(repo, "commit", "-q", "-m", "files", env=env)
        (repo / "app.py").write_bytes(b"print('changed')\n")
        (repo / "lib" / "util.py").unlink()
        (repo / "lib" / "new.py").write_bytes(b"new\n")
        (repo / "tool").write_bytes(b"#!/bin/sh\n")
        (repo / "tool").chmod(0o755)
        (repo / "ln").symlink_to("app.py")
        result = capture.capture(str(repo), env)
        assert result.tree_reason is None
        assert result.head_tree == git(repo, "rev-parse", "HEAD^{tree}", env=env)
        assert result.tree == add_all_tree(repo, env, tmp_path)
        assert len(result.tree) == (64 if algorithm == "sha256" else 40)

    def test_an_unborn_repository_has_no_tree(self, tmp_path: Path, env: dict[str, str]) -> None:
        """No commit yet: not bound, and the tree reason says why."""
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q", env=env)
        (repo / "a.txt").write_bytes(b"a\n")
        result = capture.capture(str(repo), env)
        assert result.reason == "the repository has no commit yet (HEAD is unborn)"
        assert result.tree_reason == "the repository has no commit yet"
        assert (result.head, result.tree, result.head_tree) == (None, None, None)

    def test_a_fifo_at_a_listed_path_refuses(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A tracked file replaced by a FIFO: bound, but no tree id, and the reason says why."""
        repo = make_repo(tmp_path / "repo", env)
        (repo / "app.py").unlink()
        os.mkfifo(repo / "app.py")
        result = capture.capture(str(repo), env)
        assert result.digest is not None
        assert (result.tree, result.head_tree) == (None, None)
        assert result.tree_reason == "app.py" + FIFO_REASON

    def test_a_slow_capture_warns_with_its_seconds(
        self, shared: Shared, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Over SLOW_CAPTURE seconds, the warning names the time it took."""
        monkeypatch.setattr(capture, "SLOW_CAPTURE", -1.0)
        result = capture.capture(str(shared.root), shared.env)
        assert result.warning == (
            f"capturing the work tree took {result.seconds:.1f} s, probably because git's index "
            "is stale (files touched since git last saved it); cortex never writes .git, so run "
            "`git update-index --refresh` (or any plain `git status`) once to make it fast again"
        )
