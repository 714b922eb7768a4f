"""`ledger.tail_lines`: the newest lines of a committed region, read backwards, agree with a
forward read for any line lengths, counts and uncommitted tails."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.cases.bounds import LEDGER_RECORD_MAX
from cortex.cases.errors import IntegrityError
from cortex.cases.ledger import tail_lines

LINE = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"x"))
LONG = st.integers(min_value=60_000, max_value=70_000).map(lambda n: b"y" * n)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.one_of(LINE, LONG), max_size=40),
    count=st.integers(min_value=0, max_value=50),
    tail=st.binary(max_size=40),
)
def test_tail_matches_a_forward_read(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], count: int, tail: bytes
) -> None:
    path = tmp_path_factory.mktemp("ledger") / "evidence.jsonl"
    committed = b"".join(line + b"\n" for line in lines)
    path.write_bytes(committed + tail)
    expected = lines[max(0, len(lines) - count) :]
    assert tail_lines(str(path), len(committed), count) == expected


def test_a_torn_committed_region_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "evidence.jsonl"
    path.write_bytes(b'{"id":"a"}\n{"id":"b"')
    with pytest.raises(IntegrityError, match="complete line"):
        tail_lines(str(path), path.stat().st_size, 5)


def test_a_shortened_file_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "evidence.jsonl"
    path.write_bytes(b'{"id":"a"}\n')
    with pytest.raises(IntegrityError, match="acknowledged data is gone"):
        tail_lines(str(path), 100, 5)


def test_an_oversized_line_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "evidence.jsonl"
    path.write_bytes(b"z" * (LEDGER_RECORD_MAX + 10) + b"\n" + b'{"id":"a"}\n')
    with pytest.raises(IntegrityError, match="record limit"):
        tail_lines(str(path), path.stat().st_size, 5)
