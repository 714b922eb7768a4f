"""`ledger.tail_lines`: the newest lines of a committed region, read backwards, agree with a
forward read for any line lengths, counts and uncommitted tails."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.cases import ledger
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


IDS = st.lists(
    st.from_regex(r"[0-9A-Z]{26}", fullmatch=True).map(lambda u: f"ev_{u}"),
    min_size=1,
    max_size=12,
    unique=True,
)


@settings(max_examples=150, deadline=None)
@given(ids=IDS, pad=st.lists(st.integers(0, 90), min_size=12, max_size=12), data=st.data())
def test_searches_agree_with_a_plain_reading_across_chunk_boundaries(
    tmp_path_factory: pytest.TempPathFactory,
    ids: list[str],
    pad: list[int],
    data: st.DataObject,
) -> None:
    """find_lines and line_containing read in chunks; tiny chunks put needles across them."""
    lines = [
        b'{"id":"'
        + i.encode()
        + b'","claim":"'
        + b"x" * pad[n]
        + b'","actor":"a'
        + str(n % 3).encode()
        + b'"}'
        for n, i in enumerate(ids)
    ]
    path = tmp_path_factory.mktemp("search") / "evidence.jsonl"
    committed = b"".join(line + b"\n" for line in lines)
    path.write_bytes(committed + b'{"id":"' + ids[0].encode() + b'" uncommitted')
    wanted = data.draw(st.lists(st.sampled_from([*ids, "ev_" + "Z" * 26]), max_size=4))
    expected = {
        i: line for i in wanted for line in lines if line.startswith(b'{"id":"' + i.encode())
    }
    actor = data.draw(st.sampled_from([b'"actor":"a0"', b'"actor":"a2"', b'"actor":"zz"']))
    first = next((line for line in lines if actor in line), None)
    with pytest.MonkeyPatch.context() as patch:
        # Chunks of a few bytes, so every search crosses many boundaries.
        patch.setattr(ledger, "_CHUNK", 7)
        patch.setattr(ledger, "_SCAN_BACK", 5)
        assert ledger.find_lines(str(path), len(committed), wanted) == expected
        assert ledger.line_containing(str(path), len(committed), actor) == first
