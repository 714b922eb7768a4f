"""cortex/cases/ledger.py function by function: lines, the chain's seeds, appends, committed
reads, searches and torn tails, on small files.

The store and crash tests reach these through whole commits; here each function's edges are
pinned on its own (chunk and window boundaries with the sizes shrunk), so that a mutation run of
ledger.py (docs/testing.md) sees every change to them. A test written for a mutant that survived
names it in its docstring (`function` number: the change).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
import pytest

from cortex.cases import ledger
from cortex.cases.bounds import LEDGER_RECORD_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.records import LineMeta


class Line(msgspec.Struct):
    id: str
    revision: int = 0


def lines(*ids: str, revision: int = 0) -> bytes:
    return b"".join(ledger.format_line(Line(id=i, revision=revision)) for i in ids)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "evidence.jsonl"


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks and windows of a few bytes, so that every boundary case is a short file."""
    monkeypatch.setattr(ledger, "_CHUNK", 7)
    monkeypatch.setattr(ledger, "_SCAN_BACK", 5)


class TestLines:
    def test_genesis_and_line_hash(self) -> None:
        """Kills the genesis seed's text or separators changed, and `line_hash` changed."""
        assert ledger.genesis("task_1", "evidence") == sha256_hex(
            b"cortex-ledger/v1\0task_1\0evidence"
        )
        assert ledger.line_hash(b'{"id":"a"}') == sha256_hex(b'{"id":"a"}')

    def test_format_line(self) -> None:
        assert ledger.format_line(Line(id="a")) == b'{"id":"a","revision":0}\n'

    def test_the_record_limit_counts_the_newline(self) -> None:
        """Kills `len(data) + 1 > MAX` -> `>=`, `+ 2`, `- 1`, and the message changed."""
        overhead = len(b'{"id":"","revision":0}')
        fits = Line(id="x" * (LEDGER_RECORD_MAX - 1 - overhead))
        assert len(ledger.format_line(fits)) == LEDGER_RECORD_MAX
        over = Line(id="x" * (LEDGER_RECORD_MAX - overhead))
        with pytest.raises(InvalidInputError) as caught:
            ledger.format_line(over)
        assert str(caught.value) == (
            f"record is {LEDGER_RECORD_MAX + 1} bytes encoded, over the "
            f"{LEDGER_RECORD_MAX}-byte limit"
        )

    def test_parse_line(self) -> None:
        assert ledger.parse_line(b'{"id":"a"}', Line, where="w") == Line(id="a")
        with pytest.raises(IntegrityError) as caught:
            ledger.parse_line(b'{"id":1}', Line, where="evidence.jsonl byte 9")
        assert str(caught.value).startswith("evidence.jsonl byte 9: ")
        with pytest.raises(IntegrityError, match=r"^w: "):
            ledger.parse_line(b"{", Line, where="w")


class TestAppend:
    def test_append_creates_a_private_file_and_appends(self, path: Path) -> None:
        """Kills the flags or mode of the open changed, and the write or fsync dropped."""
        ledger.append(str(path), b"one\n")
        ledger.append(str(path), b"two\n")
        assert path.read_bytes() == b"one\ntwo\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

    def test_append_refuses_a_hard_link(self, path: Path, tmp_path: Path) -> None:
        path.write_bytes(b"")
        os.link(path, tmp_path / "other")
        with pytest.raises(IntegrityError):
            ledger.append(str(path), b"x\n")
        assert path.read_bytes() == b""


class TestIterLines:
    @pytest.mark.usefixtures("small")
    def test_lines_and_offsets_across_chunks(self, path: Path) -> None:
        """Kills the chunk loop's arithmetic: offsets, `remaining`, `pending` carried over."""
        data = b"a\nbcdefghij\n\nklm\n" + b"tail"
        path.write_bytes(data)
        committed = len(data) - 4
        assert list(ledger.iter_lines(str(path), committed)) == [
            (0, b"a"),
            (2, b"bcdefghij"),
            (12, b""),
            (13, b"klm"),
        ]

    def test_nothing_committed_reads_nothing(self, tmp_path: Path) -> None:
        """Kills `length == 0` -> `!= 0` or `== 1`: a missing file with nothing committed."""
        assert list(ledger.iter_lines(str(tmp_path / "absent.jsonl"), 0)) == []

    def test_a_short_file_is_an_integrity_error(self, path: Path) -> None:
        """Kills `size < length` -> `<=` and the message changed."""
        path.write_bytes(b"a\n")
        assert list(ledger.iter_lines(str(path), 2)) == [(0, b"a")]
        with pytest.raises(IntegrityError) as caught:
            list(ledger.iter_lines(str(path), 3))
        assert str(caught.value) == (
            f"{path} is 2 bytes but 3 are committed: acknowledged data is gone"
        )
        assert caught.value.path == str(path)

    @pytest.mark.usefixtures("small")
    def test_a_torn_committed_region(self, path: Path) -> None:
        path.write_bytes(b"a\nbc")
        with pytest.raises(IntegrityError) as caught:
            list(ledger.iter_lines(str(path), 4))
        assert (
            str(caught.value) == f"{path}: the committed region does not end with a complete line"
        )
        assert caught.value.path == str(path)

    def test_the_line_limit(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Kills `len(line) + 1 > MAX` -> `>=` or `+ 2`, in both checks, and their messages."""
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 4)
        monkeypatch.setattr(ledger, "_CHUNK", 100)
        path.write_bytes(b"abc\nd\n")
        assert list(ledger.iter_lines(str(path), 6)) == [(0, b"abc"), (4, b"d")]
        path.write_bytes(b"ab\nabcd\n")
        with pytest.raises(IntegrityError) as caught:
            list(ledger.iter_lines(str(path), 8))
        assert str(caught.value) == f"{path}: line at byte 3 exceeds the record limit"
        assert caught.value.path == str(path)

    def test_the_line_limit_without_a_newline_yet(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills the pending-bytes check dropped or `>` -> `>=`: a long line is refused before
        its end is read."""
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 4)
        monkeypatch.setattr(ledger, "_CHUNK", 4)
        path.write_bytes(b"ab\nabcde")
        with pytest.raises(IntegrityError) as caught:
            list(ledger.iter_lines(str(path), 8))
        assert str(caught.value) == f"{path}: line at byte 3 exceeds the record limit"
        path.write_bytes(b"ab\nabc\n")
        assert list(ledger.iter_lines(str(path), 7)) == [(0, b"ab"), (3, b"abc")]

    def test_a_file_that_shrinks_while_read(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `if not chunk` dropped (an endless loop) and its message changed."""
        path.write_bytes(b"ab\ncd\n")
        real = os.read
        calls = []

        def short(fd: int, n: int) -> bytes:
            calls.append(n)
            return real(fd, n) if len(calls) == 1 else b""

        monkeypatch.setattr(ledger, "_CHUNK", 3)
        monkeypatch.setattr(os, "read", short)
        with pytest.raises(IntegrityError) as caught:
            list(ledger.iter_lines(str(path), 6))
        assert str(caught.value) == f"{path} ended early while reading"
        assert calls == [3, 3]


class TestReadRecords:
    def test_records_and_the_revision_check(self, path: Path) -> None:
        """Kills `line_revision > revision` -> `>=`, the default revision changed, and the
        message (with the file's name and offset) changed."""
        data = lines("a", revision=1) + lines("b", revision=2)
        path.write_bytes(data)
        got = list(ledger.read_records(str(path), len(data), Line, revision=2))
        assert got == [Line(id="a", revision=1), Line(id="b", revision=2)]
        with pytest.raises(IntegrityError) as caught:
            list(ledger.read_records(str(path), len(data), Line, revision=1))
        offset = len(lines("a", revision=1))
        assert str(caught.value) == (
            f"evidence.jsonl byte {offset}: line claims revision 2 > case 1"
        )
        assert caught.value.path == str(path)

    def test_a_record_without_a_revision(self, path: Path) -> None:
        class Bare(msgspec.Struct):
            id: str

        path.write_bytes(b'{"id":"a"}\n')
        assert list(ledger.read_records(str(path), 11, Bare, revision=0)) == [Bare(id="a")]

    def test_a_bad_line_names_its_place(self, path: Path) -> None:
        path.write_bytes(b'{"id":"a"}\n{"id":2}\n')
        with pytest.raises(IntegrityError, match=r"^evidence.jsonl byte 11: "):
            list(ledger.read_records(str(path), 20, Line, revision=0))


class TestSearch:
    @pytest.mark.usefixtures("small")
    def test_occurrences_across_chunks(self, path: Path) -> None:
        """Kills `_occurrences`' carry and base arithmetic: a needle split by a chunk edge is
        found once, at its offset, and never past `length`."""
        data = b"xxxxxNEEDLExNEEDLEyyNEEDLE"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert list(ledger._occurrences(fd, len(data), b"NEEDLE")) == [5, 12, 20]
            assert list(ledger._occurrences(fd, 25, b"NEEDLE")) == [5, 12]
            assert list(ledger._occurrences(fd, len(data), b"E")) == [
                i for i, c in enumerate(data) if c == ord("E")
            ]
            assert list(ledger._occurrences(fd, len(data) + 10, b"y")) == [18, 19]
        finally:
            os.close(fd)

    @pytest.mark.usefixtures("small")
    def test_line_around(self, path: Path) -> None:
        """Kills `_line_around`'s backward window and forward read arithmetic."""
        data = b"first\nsecond line\nthird\n"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(data), 0) == (0, b"first")
            assert ledger._line_around(fd, len(data), 4) == (0, b"first")
            assert ledger._line_around(fd, len(data), 6) == (6, b"second line")
            assert ledger._line_around(fd, len(data), 16) == (6, b"second line")
            assert ledger._line_around(fd, len(data), 18) == (18, b"third")
            assert ledger._line_around(fd, len(data) - 1, 20) == (18, b"third")
            assert ledger._line_around(fd, 21, 19) == (18, b"thi")
        finally:
            os.close(fd)

    @pytest.mark.usefixtures("small")
    def test_line_around_gives_up_past_the_record_limit(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills the two `> LEDGER_RECORD_MAX` stops changed: a line longer than the limit is
        not walked to its ends."""
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 8)
        data = b"a\n" + b"z" * 30 + b"\n"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            start, found = ledger._line_around(fd, len(data), 25)
        finally:
            os.close(fd)
        assert start == 15
        assert found == b"z" * 10

    @pytest.mark.usefixtures("small")
    def test_line_containing(self, path: Path) -> None:
        data = lines("a1", "b2", "c3") + b'{"id":"d4"'
        path.write_bytes(data)
        committed = len(data) - 10
        assert ledger.line_containing(str(path), committed, b'"b2"') == b'{"id":"b2","revision":0}'
        assert ledger.line_containing(str(path), committed, b'"d4"') is None
        assert ledger.line_containing(str(path), 0, b'"a1"') is None
        assert ledger.line_containing(str(path.with_name("none")), 0, b"x") is None

    def test_searches_refuse_a_short_file(self, path: Path) -> None:
        """Kills `_checked_fd`'s `size < length` -> `<=`, and its message changed."""
        path.write_bytes(lines("a"))
        size = path.stat().st_size
        assert ledger.find_lines(str(path), size, ["a"]) == {"a": b'{"id":"a","revision":0}'}
        for search in (
            lambda: ledger.line_containing(str(path), size + 1, b"a"),
            lambda: ledger.find_lines(str(path), size + 1, ["a"]),
            lambda: ledger.ids_beginning(str(path), size + 1, "a", 5),
        ):
            with pytest.raises(IntegrityError) as caught:
                search()
            assert str(caught.value) == (
                f"{path} is {size} bytes but {size + 1} are committed: acknowledged data is gone"
            )
            assert caught.value.path == str(path)

    @pytest.mark.usefixtures("small")
    def test_find_lines_only_at_a_line_start(self, path: Path) -> None:
        """Kills `at == 0 or pread(at - 1) == "\\n"` changed: an id quoted inside another line
        is not that record."""
        inner = b'{"id":"x","note":{"id":"b"}}\n'
        data = inner + lines("a", "b")
        path.write_bytes(data)
        found = ledger.find_lines(str(path), len(data), ["a", "b", "zz"])
        assert found == {"a": b'{"id":"a","revision":0}', "b": b'{"id":"b","revision":0}'}
        assert ledger.find_lines(str(path), len(data), []) == {}
        assert ledger.find_lines(str(path), 0, ["a"]) == {}
        assert ledger.find_lines(str(path), len(data), ["x"]) == {"x": inner[:-1]}

    @pytest.mark.usefixtures("small")
    def test_ids_beginning(self, path: Path) -> None:
        """Kills `ids_beginning`'s line-start check, `limit`, the count and the id window."""
        data = b'{"id":"q","n":{"id":"ev_9"}}\n' + lines("ev_1", "ev_22", "cmd_1", "ev_333")
        path.write_bytes(data)
        assert ledger.ids_beginning(str(path), len(data), "ev_", 2) == (["ev_1", "ev_22"], 3)
        assert ledger.ids_beginning(str(path), len(data), "ev_", 5) == (
            ["ev_1", "ev_22", "ev_333"],
            3,
        )
        assert ledger.ids_beginning(str(path), len(data), "ev_", 0) == ([], 3)
        assert ledger.ids_beginning(str(path), len(data), "q", 9) == (["q"], 1)
        assert ledger.ids_beginning(str(path), 0, "ev_", 9) == ([], 0)
        assert ledger.ids_beginning(str(path), len(data), "nope", 9) == ([], 0)

    def test_ids_beginning_reads_within_the_committed_region(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills the id window's length (`min(_ID_READ, length - at - head)`) changed: an id
        is read only from committed bytes, and at most `_ID_READ` of them."""
        data = lines("ev_1")
        path.write_bytes(data + b'{"id":"ev_2"')
        assert ledger.ids_beginning(str(path), len(data), "ev_", 9) == (["ev_1"], 1)
        monkeypatch.setattr(ledger, "_ID_READ", 3)
        assert ledger.ids_beginning(str(path), len(data), "ev_", 9) == (["ev_"], 1)

    def test_read_range(self, path: Path) -> None:
        path.write_bytes(b"0123456789")
        assert ledger.read_range(str(path), 2, 6) == b"2345"
        assert ledger.read_range(str(path), 0, 10) == b"0123456789"
        assert ledger.read_range(str(path), 4, 4) == b""


class TestTail:
    def test_uncommitted_tail(self, path: Path) -> None:
        """Kills `max(size - committed, 0)` changed and the missing-file case."""
        assert ledger.uncommitted_tail(str(path), 0) == 0
        path.write_bytes(b"abcdef")
        assert ledger.uncommitted_tail(str(path), 4) == 2
        assert ledger.uncommitted_tail(str(path), 6) == 0
        assert ledger.uncommitted_tail(str(path), 9) == 0

    def test_check_tail_classifies(self, path: Path) -> None:
        """Kills `check_tail`'s comparisons: what an interrupted commit can leave (a torn line,
        lines of a later revision) may be cut; anything else is refused."""
        committed = lines("a", revision=1)
        assert ledger.check_tail(str(path), 0, 1) == 0
        with pytest.raises(IntegrityError) as caught:
            ledger.check_tail(str(path), 5, 1)
        assert str(caught.value) == f"{path} is missing but 5 bytes are committed: data is gone"
        assert caught.value.path == str(path)
        path.write_bytes(committed)
        assert ledger.check_tail(str(path), len(committed), 1) == 0
        with pytest.raises(IntegrityError) as caught:
            ledger.check_tail(str(path), len(committed) + 1, 1)
        assert str(caught.value) == (
            f"{path} is {len(committed)} bytes but {len(committed) + 1} are committed: "
            "acknowledged data is gone"
        )
        later = lines("b", revision=2)
        path.write_bytes(committed + later + b'{"id":"c"')
        assert ledger.check_tail(str(path), len(committed), 1) == len(later) + 9
        path.write_bytes(committed + b"torn")
        assert ledger.check_tail(str(path), len(committed), 1) == 4
        for foreign in (lines("b", revision=1), lines("b", revision=0), b"not json\n"):
            path.write_bytes(committed + foreign)
            with pytest.raises(IntegrityError) as caught:
                ledger.check_tail(str(path), len(committed), 1)
            assert str(caught.value) == (
                f"{path} has data after its committed end that no interrupted write could have "
                "left; refusing to truncate it (run `cortex case audit`)"
            )
            assert caught.value.path == str(path)

    def test_check_tail_scan_limit(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Kills `extra > TAIL_SCAN_MAX` -> `>=` and its message changed."""
        monkeypatch.setattr(ledger, "TAIL_SCAN_MAX", 4)
        path.write_bytes(b"abcd")
        assert ledger.check_tail(str(path), 0, 1) == 4
        path.write_bytes(b"abcde")
        with pytest.raises(IntegrityError) as caught:
            ledger.check_tail(str(path), 0, 1)
        assert str(caught.value) == (
            f"{path} has 5 uncommitted bytes, too many to be an interrupted write"
        )
        assert caught.value.path == str(path)

    def test_line_meta_default(self) -> None:
        assert msgspec.json.decode(b'{"id":"a"}', type=LineMeta).revision == 0

    def test_truncate(self, path: Path) -> None:
        path.write_bytes(b"abcdef")
        ledger.truncate(str(path), 4)
        assert path.read_bytes() == b"abcd"
        ledger.truncate(str(path), 0)
        assert path.read_bytes() == b""

    def test_truncate_never_follows_a_symlink(self, path: Path, tmp_path: Path) -> None:
        """Kills `O_NOFOLLOW` dropped from truncate's flags."""
        target = tmp_path / "target"
        target.write_bytes(b"keep me")
        path.symlink_to(target)
        with pytest.raises(OSError):
            ledger.truncate(str(path), 0)
        assert target.read_bytes() == b"keep me"

    def test_truncate_needs_an_existing_file(self, path: Path) -> None:
        """Kills `O_WRONLY` changed to a flag set that creates the file."""
        with pytest.raises(FileNotFoundError):
            ledger.truncate(str(path), 0)
        assert not path.exists()

    def test_tail_lines_edges(self, path: Path) -> None:
        data = lines("a", "b", "c")
        path.write_bytes(data)
        assert ledger.tail_lines(str(path), len(data), 0) == []
        assert ledger.tail_lines(str(path), len(data), -1) == []
        assert ledger.tail_lines(str(path), 0, 3) == []
        assert ledger.tail_lines(str(path), len(data), 2) == [
            b'{"id":"b","revision":0}',
            b'{"id":"c","revision":0}',
        ]
        assert len(ledger.tail_lines(str(path), len(data), 9)) == 3


class TestSurvivors:
    """Tests for the mutants the first mutation run of ledger.py left alive (docs/testing.md)."""

    def test_append_names_the_linked_file(self, path: Path, tmp_path: Path) -> None:
        """Kills `append` 9: `check_single_link(fd, path)` -> `(fd, None)`."""
        path.write_bytes(b"")
        os.link(path, tmp_path / "other")
        with pytest.raises(IntegrityError) as caught:
            ledger.append(str(path), b"x\n")
        assert str(path) in str(caught.value)

    def test_a_region_one_byte_past_a_chunk(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `iter_lines` 19: `while remaining > 0` -> `> 1` (the last byte unread)."""
        monkeypatch.setattr(ledger, "_CHUNK", 7)
        path.write_bytes(b"abcdef\nx\n")
        assert list(ledger.iter_lines(str(path), 9)) == [(0, b"abcdef"), (7, b"x")]

    def test_an_empty_first_line(self, path: Path) -> None:
        """Kills `iter_lines` 48, 49: `end < 0` -> `<= 0` or `< 1`."""
        path.write_bytes(b"\nab\n")
        assert list(ledger.iter_lines(str(path), 4)) == [(0, b""), (1, b"ab")]

    def test_every_refusal_names_its_file(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `iter_lines` 31, 33, 72, 74, `tail_lines` 13, 15, 29, 31, 81, 83 and
        `check_tail` 14, 16: the IntegrityError's `path` dropped (audit reports it)."""
        where = str(path)
        path.write_bytes(b"ab\ncd\n")
        real = os.read
        monkeypatch.setattr(os, "read", lambda fd, n: real(fd, min(n, 3)) if n > 3 else b"")
        monkeypatch.setattr(ledger, "_CHUNK", 3)
        with pytest.raises(IntegrityError) as early:
            list(ledger.iter_lines(where, 6))
        assert early.value.path == where
        monkeypatch.undo()
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 4)
        monkeypatch.setattr(ledger, "_CHUNK", 4)
        path.write_bytes(b"ab\nabcde")
        with pytest.raises(IntegrityError) as pending:
            list(ledger.iter_lines(where, 8))
        assert pending.value.path == where
        path.write_bytes(b"abcdefg\nab\n")
        with pytest.raises(IntegrityError) as long:
            ledger.tail_lines(where, 11, 5)
        assert str(long.value) == f"{where}: a line before byte 7 exceeds the record limit"
        assert long.value.path == where
        monkeypatch.undo()
        path.write_bytes(b"ab\n")
        for call in (
            lambda: ledger.tail_lines(where, 9, 1),
            lambda: ledger.check_tail(where, 9, 1),
        ):
            with pytest.raises(IntegrityError) as short:
                call()
            assert short.value.path == where
        path.write_bytes(b"ab\ncd")
        with pytest.raises(IntegrityError) as torn:
            ledger.tail_lines(where, 5, 1)
        assert torn.value.path == where

    def test_a_torn_region_of_exactly_the_limit(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `iter_lines` 69: `len(pending) > MAX` -> `>=`: a torn end of exactly the limit
        is reported as torn, not as a line over the limit."""
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 4)
        monkeypatch.setattr(ledger, "_CHUNK", 4)
        path.write_bytes(b"abcd")
        with pytest.raises(IntegrityError, match="does not end with a complete line"):
            list(ledger.iter_lines(str(path), 4))

    def test_occurrences_start_with_nothing_carried(self, path: Path) -> None:
        """Kills `_occurrences` 3: the carry starts as b"XXXX", not b""."""
        path.write_bytes(b"Nab")
        fd = os.open(path, os.O_RDONLY)
        try:
            assert list(ledger._occurrences(fd, 3, b"XXN")) == []
        finally:
            os.close(fd)

    @pytest.mark.usefixtures("small")
    def test_line_around_short_lines(self, path: Path) -> None:
        """Kills `_line_around` 22 (`rfind` -> `find` backwards), 24, 25 (a newline at a
        window's start missed), 65 (`find` -> `rfind` forwards), 69, 70 (an empty line)."""
        short = b"a\nb\nccc\n"
        path.write_bytes(short)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(short), 0) == (0, b"a")
            assert ledger._line_around(fd, len(short), 4) == (4, b"ccc")
        finally:
            os.close(fd)
        edge = b"\nabcdefghi\n"
        path.write_bytes(edge)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(edge), 6) == (1, b"abcdefghi")
        finally:
            os.close(fd)
        empty = b"a\n\nb\n"
        path.write_bytes(empty)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(empty), 2) == (2, b"")
        finally:
            os.close(fd)

    def test_line_around_limits_exactly(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Kills `_line_around` 35 (`at - line_start > MAX` -> `>=`), 59 and 60 (the forward
        read's `len(data) > MAX + 1` -> `>=`, or `> MAX - 1`)."""
        monkeypatch.setattr(ledger, "_SCAN_BACK", 5)
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 10)
        data = b"a\n" + b"z" * 30 + b"\n"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(data), 25)[0] == 10
        finally:
            os.close(fd)
        monkeypatch.setattr(ledger, "_SCAN_BACK", 3)
        monkeypatch.setattr(ledger, "LEDGER_RECORD_MAX", 8)
        data = b"z" * 30 + b"\n"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert ledger._line_around(fd, len(data), 0) == (0, b"z" * 12)
        finally:
            os.close(fd)

    def test_nothing_committed_opens_nothing(self, tmp_path: Path) -> None:
        """Kills `find_lines` 1, 3 and `ids_beginning` 2: with nothing committed the file is
        not opened (it may not exist yet)."""
        absent = str(tmp_path / "absent.jsonl")
        assert ledger.find_lines(absent, 0, ["a"]) == {}
        assert ledger.ids_beginning(absent, 0, "ev_", 5) == ([], 0)
        assert ledger.line_containing(absent, 0, b"a") is None

    def test_an_id_that_is_not_ascii(self, path: Path) -> None:
        """Kills `ids_beginning` 59, 70, 71: `decode("ascii", "replace")` with the handler
        dropped or changed (a stray byte raised instead of showing as U+FFFD)."""
        data = '{"id":"ev_\u00e9"}\n'.encode()
        path.write_bytes(data)
        assert ledger.ids_beginning(str(path), len(data), "ev_", 5) == (["ev_\ufffd\ufffd"], 1)

    def test_tail_of_zero_lines_reads_nothing(self, path: Path) -> None:
        """Kills `tail_lines` 4: `count <= 0` -> `< 0` (zero lines asked still read the file)."""
        path.write_bytes(b"ab\ncd")
        assert ledger.tail_lines(str(path), 5, 0) == []

    def test_check_tail_one_byte_and_garbage_at_revision_zero(self, path: Path) -> None:
        """Kills `check_tail` 20 (`extra == 0` -> `== 1`: a one-byte torn tail kept) and 45 (an
        undecodable line counted as revision 1, so cut at revision 0)."""
        path.write_bytes(b"ab\nx")
        assert ledger.check_tail(str(path), 3, 1) == 1
        path.write_bytes(b"ab\nnot json\n")
        with pytest.raises(IntegrityError, match="refusing to truncate"):
            ledger.check_tail(str(path), 3, 0)

    @pytest.mark.usefixtures("small")
    def test_occurrences_of_short_needles(self, path: Path) -> None:
        """Kills `_occurrences` 50 (a two-byte needle split by a chunk edge lost: `len(needle)
        > 1` -> `> 2`) and 51 (a one-byte needle's carry b"XXXX", not b"")."""
        data = b"abcdefXXhijklXnXpqrstX"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            for needle in (b"X", b"XX", b"fX", b"Xh", b"lX"):
                expected = [i for i in range(len(data)) if data.startswith(needle, i)]
                assert list(ledger._occurrences(fd, len(data), needle)) == expected, needle
        finally:
            os.close(fd)

    def test_a_region_ending_one_byte_past_a_chunk(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `iter_lines` 19: `while remaining > 0` -> `> 1` (the last byte never read)."""
        monkeypatch.setattr(ledger, "_CHUNK", 7)
        path.write_bytes(b"abcdef\n\n")
        assert list(ledger.iter_lines(str(path), 8)) == [(0, b"abcdef"), (7, b"")]
