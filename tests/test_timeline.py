"""`cortex case timeline`: every event of a case, ordered, filtered, paged and anchored.

Most tests read one case seeded once through the real CLI (a module fixture): the timeline
writes nothing (a test checks that byte for byte), so sharing it is safe. The expected entries
come from an independent reading of the case files with the standard `json` module. The golden
test drives the kernel in-process with a fixed clock so that its cards and text are stable.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    Outcome,
    base_env,
    case_lock_held,
    case_path,
    configure_verifiers,
    make_repo,
    ready_to_verify,
)
from golden_case import (
    GOLDEN,
    LONG_CLAIM,
    PASSWORD,
    RAW_BODY,
    SENSITIVE_CLAIM,
    TOKEN,
    normalized,
    seed_golden,
)

from cortex.cases import bounds
from cortex.cases.ids import new_id
from cortex.cases.records import Evidence, Source, encode

SORT = re.compile(r"^[a-z]+_([0-9A-Z]{26})")


# Helpers -------------------------------------------------------------------------------------


def order(at: str, entry_id: str) -> tuple[str, str, str]:
    """The documented order: time, then the id's ULID, then the id."""
    match = SORT.match(entry_id)
    assert match is not None, entry_id
    return (at, match.group(1), entry_id)


def row(entry_id: str, at: str, kind: str, actor: str) -> dict[str, str]:
    return {"id": entry_id, "at": at, "kind": kind, "actor": actor}


def expected_entries(env: dict[str, str], task: str) -> list[dict[str, str]]:
    """Every entry the case holds, read with `json` from the files (committed bytes only)."""
    directory = case_path(env, task)
    case = json.loads((directory / "case.json").read_text())
    rows: list[dict[str, str]] = []
    for ledger, kind in (("phases", "phase"), ("evidence", "evidence"), ("commands", "command")):
        length = case["ledgers"][ledger]["bytes"]
        for line in (directory / f"{ledger}.jsonl").read_bytes()[:length].splitlines():
            record = json.loads(line)
            actor = record["source"]["actor"] if kind == "evidence" else record["actor"]
            rows.append(row(record["id"], record["timestamp"], kind, actor))
    decisions = directory / "decisions.json"
    for decision in json.loads(decisions.read_text())["decisions"] if decisions.exists() else []:
        rows.append(row(decision["id"], decision["requestedAt"], "decision", decision["requester"]))
        if decision.get("answeredAt"):
            answer = decision["id"] + ":answer"
            rows.append(row(answer, decision["answeredAt"], "decision", decision["responder"]))
    verification = directory / "verification.json"
    doc = json.loads(verification.read_text()) if verification.exists() else {}
    rows += [row(b["id"], b["finishedAt"], "batch", b["actor"]) for b in doc.get("batches", [])]
    rows += [row(r["id"], r["timestamp"], "receipt", r["actor"]) for r in doc.get("receipts", [])]
    return sorted(rows, key=lambda entry: order(entry["at"], entry["id"]))


def timeline(cli: Cli, task: str, *args: str, cwd: Path | None = None) -> Outcome:
    return cli("case", "timeline", task, *args, cwd=cwd)


def walk(cli: Cli, task: str, *args: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every page, following nextCursor; returns (entries, page data)."""
    entries: list[dict[str, Any]] = []
    pages: list[dict[str, Any]] = []
    cursor: list[str] = []
    for _ in range(1000):
        data = timeline(cli, task, *args, *cursor).data
        pages.append(data)
        entries += data["entries"]
        if data["nextCursor"] is None:
            return entries, pages
        cursor = ["--cursor", data["nextCursor"]]
    raise AssertionError("the walk did not end")


def assert_invalid(out: Outcome, code: int = 4) -> dict[str, Any]:
    """Exit `code`, exactly one failure envelope, no traceback anywhere."""
    assert out.code == code, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    envelope = out.envelope
    assert envelope["ok"] is False
    assert envelope["command"] == "case.timeline"
    return envelope


def files_state(*roots: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime_ns, and every directory's mtime_ns, under `roots`."""
    state: dict[str, tuple[bytes, int]] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            info = path.lstat()
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            state[str(path)] = (content, info.st_mtime_ns)
    return state


# The shared case ------------------------------------------------------------------------------


@dataclass
class Seeded:
    cli: Cli
    task: str
    env: dict[str, str]
    repo: Path
    sensitive_id: str
    secret_id: str
    long_id: str
    answered: str
    pending: str


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """A case with every kind of entry, through the real CLI: plan, lease, evidence (one
    sensitive, one redacted with raw output, one long), a note, an answered and a pending
    decision, and a verify batch whose receipt the last edit made stale."""
    tmp = tmp_path_factory.mktemp("timeline")
    env = base_env(tmp)
    repo = make_repo(tmp / "repo", env)
    configure_verifiers(repo, env, {"unit": ["sh", "-c", "echo 3 passed"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    cli = Cli(env, repo)
    task = ready_to_verify(cli)

    def add(*args: str, stdin: bytes = b"") -> str:
        out = cli("case", "evidence", "add", task, *args, stdin=stdin)
        return str(out.data["evidence"]["id"])

    sensitive_id = add("--claim", SENSITIVE_CLAIM, "--sensitive", "--actor", "agent-1")
    secret_id = add(
        "--claim", f"the deploy log shows {TOKEN}", "--kind", "terminal_run", "--raw-file", "-",
        stdin=RAW_BODY,
    )  # fmt: skip
    long_id = add("--claim", LONG_CLAIM, "--confidence", "high")
    assert cli("case", "note", task, "return_to is dropped\nbefore the callback").code == 0
    asked = cli(
        "case", "decision", "request", task, "--question", f"Rotate it? password={PASSWORD}",
        "--option", "safe=Safe migration|slower", "--option", "fast=Fast migration|riskier",
    ).data["decision"]["id"]  # fmt: skip
    answer = cli(
        "case", "decision", "answer", task, asked, "--answer", "safe", "--responder", "alice"
    )
    assert answer.code == 0, answer.stdout
    (repo / "app.py").write_text("print('fixed')\n")
    verified = cli("case", "verify", task)
    assert verified.data["batch"]["binding"] == "bound", verified.stdout
    (repo / "app.py").write_text("print('edited after the proof')\n")
    pending = cli(
        "case", "decision", "request", task, "--question", "Ship it behind a flag?",
        "--option", "yes=Behind a flag", "--option", "no=Straight out",
    ).data["decision"]["id"]  # fmt: skip
    return Seeded(cli, task, env, repo, sensitive_id, secret_id, long_id, asked, pending)


# Order and content ----------------------------------------------------------------------------


def test_every_record_appears_once_in_time_then_id_order(seeded: Seeded) -> None:
    """The entries are exactly the case's records, ordered by time, then the id's ULID."""
    expected = expected_entries(seeded.env, seeded.task)
    data = timeline(seeded.cli, seeded.task, "--limit", "500").data
    got = [{k: e[k] for k in ("id", "at", "kind", "actor")} for e in data["entries"]]
    assert got == expected
    assert data["total"] == data["returned"] == len(expected)
    assert data["nextCursor"] is None
    assert {e["kind"] for e in got} == {
        "phase", "evidence", "command", "decision", "receipt", "batch"
    }  # fmt: skip
    keys = [order(e["at"], e["id"].removesuffix(":answer")) for e in data["entries"]]
    assert keys == sorted(keys)


def test_cards_carry_facts_not_bodies(seeded: Seeded) -> None:
    """Sensitive text, secrets and raw output never appear; titles are one bounded line."""
    out = timeline(seeded.cli, seeded.task, "--limit", "500")
    for text in (out.stdout, seeded.cli("case", "timeline", seeded.task, human=True).stdout):
        assert "SENSITIVE-CLAIM-MARKER" not in text
        assert TOKEN not in text
        assert PASSWORD not in text
        assert "RAW-BODY-MARKER" not in text
        assert "hunter2" not in text
    cards = {e["id"]: e for e in out.data["entries"]}
    sensitive = cards[seeded.sensitive_id]
    assert (sensitive["title"], sensitive["sensitive"], sensitive["hasRaw"]) == (
        "(sensitive)", True, False
    )  # fmt: skip
    secret = cards[seeded.secret_id]
    assert (secret["title"], secret["sensitive"], secret["hasRaw"]) == ("(sensitive)", True, True)
    assert secret["evidenceKind"] == "terminal_run"
    assert "rawRef" not in secret
    question = cards[seeded.answered]
    assert question["title"] == "Rotate it? password=[REDACTED]"
    assert question["event"] == "request"
    assert (question["status"], question["options"]) == ("answered", 2)
    answer = cards[seeded.answered + ":answer"]
    assert (answer["actor"], answer["answer"], answer["title"]) == (
        "alice", "safe", "answered safe: Safe migration"
    )  # fmt: skip
    assert cards[seeded.pending]["status"] == "pending"
    long = cards[seeded.long_id]["title"]
    assert len(long) <= bounds.TIMELINE_TITLE_MAX
    assert long.endswith("\u2026")
    assert LONG_CLAIM.startswith(long[:-1])
    assert LONG_CLAIM[len(long) - 1] == " ", "cut at a word boundary"
    note = next(e for e in cards.values() if e.get("evidenceKind") == "note")
    assert note["title"] == "return_to is dropped before the callback"
    receipt = next(e for e in cards.values() if e["kind"] == "receipt")
    assert (receipt["status"], receipt["binding"], receipt["standing"]) == (
        "passed", "bound", "stale"
    )  # fmt: skip
    for card in cards.values():
        assert "\n" not in card["title"]
        assert len(card["title"]) <= bounds.TIMELINE_TITLE_MAX
        assert not {"claim", "raw", "content", "question", "rawRef"} & set(card)


def test_human_text_has_one_line_per_entry_and_a_working_next_page(seeded: Seeded) -> None:
    """Each entry is one line (time, kind, actor, title); the footer's command gives page two."""
    first = seeded.cli("case", "timeline", seeded.task, "--limit", "4", human=True)
    assert first.code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"Timeline of {seeded.task} at revision ")
    entries = timeline(seeded.cli, seeded.task, "--limit", "8").data["entries"]
    for line, entry in zip(lines[1:5], entries[:4], strict=True):
        assert re.match(rf"  {re.escape(entry['at'])}  {entry['kind']}\s+\S+  ", line), line
        assert line.endswith(entry["id"])
    total = len(expected_entries(seeded.env, seeded.task))
    assert lines[5] == f"showing 4 of {total}"
    assert lines[6].startswith("next page: cortex case timeline ")
    argv = shlex.split(lines[6].removeprefix("next page: "))[1:]
    second = seeded.cli(*argv).data
    assert [e["id"] for e in second["entries"]] == [e["id"] for e in entries[4:8]]


# Filters ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["phase", "evidence", "command", "decision", "receipt", "batch"])
def test_each_kind_filter_keeps_exactly_that_kind(seeded: Seeded, kind: str) -> None:
    """`--kind K` returns every entry of kind K and nothing else, with an exact total."""
    expected = [e["id"] for e in expected_entries(seeded.env, seeded.task) if e["kind"] == kind]
    data = timeline(seeded.cli, seeded.task, "--kind", kind).data
    assert [e["id"] for e in data["entries"]] == expected
    assert data["total"] == len(expected) > 0
    assert data["filters"]["kinds"] == [kind]


def test_kinds_combine_and_repeat(seeded: Seeded) -> None:
    """Several --kind values are a union; a repeated one counts once."""
    wanted = {"receipt", "decision"}
    expected = [e["id"] for e in expected_entries(seeded.env, seeded.task) if e["kind"] in wanted]
    args = ("--kind", "receipt", "--kind", "decision", "--kind", "receipt")
    data = timeline(seeded.cli, seeded.task, *args).data
    assert [e["id"] for e in data["entries"]] == expected
    assert data["filters"]["kinds"] == ["decision", "receipt"]


def test_actor_filter(seeded: Seeded) -> None:
    """`--actor` keeps the entries that actor made; an unknown actor matches nothing."""
    everything = expected_entries(seeded.env, seeded.task)
    for actor in ("alice", "agent-1", "cli"):
        expected = [e["id"] for e in everything if e["actor"] == actor]
        data = timeline(seeded.cli, seeded.task, "--actor", actor).data
        assert [e["id"] for e in data["entries"]] == expected
        assert data["total"] == len(expected) > 0
    assert timeline(seeded.cli, seeded.task, "--actor", "nobody").data["total"] == 0


def test_since_and_until_are_inclusive_and_a_date_covers_its_day(seeded: Seeded) -> None:
    """Bounds compare against each entry's time; offsets are converted to UTC."""
    everything = expected_entries(seeded.env, seeded.task)
    middle = everything[len(everything) // 2]["at"]
    since = timeline(seeded.cli, seeded.task, "--since", middle, "--limit", "500").data
    assert [e["id"] for e in since["entries"]] == [e["id"] for e in everything if e["at"] >= middle]
    until = timeline(seeded.cli, seeded.task, "--until", middle, "--limit", "500").data
    assert [e["id"] for e in until["entries"]] == [e["id"] for e in everything if e["at"] <= middle]
    assert since["total"] + until["total"] == len(everything) + sum(
        e["at"] == middle for e in everything
    )
    day = everything[-1]["at"][:10]
    assert timeline(seeded.cli, seeded.task, "--until", day).data["total"] == len(everything)
    # The same instant written with an offset selects the same entries.
    instant = datetime.fromisoformat(middle).astimezone(timezone(timedelta(hours=2)))
    shifted = instant.isoformat(timespec="milliseconds")
    assert shifted.endswith("+02:00")
    again = timeline(seeded.cli, seeded.task, "--since", shifted, "--limit", "500").data
    assert again["total"] == since["total"]
    after_all = f"{int(day[:4]) + 1}-01-01"
    assert timeline(seeded.cli, seeded.task, "--since", after_all).data["total"] == 0


# Pagination -----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 3, 7])
def test_pages_walk_every_entry_exactly_once(seeded: Seeded, limit: int) -> None:
    """Following nextCursor visits each entry once, in order, with the same exact total."""
    expected = [e["id"] for e in expected_entries(seeded.env, seeded.task)]
    entries, pages = walk(seeded.cli, seeded.task, "--limit", str(limit))
    assert [e["id"] for e in entries] == expected
    assert {page["total"] for page in pages} == {len(expected)}
    assert all(page["returned"] == len(page["entries"]) <= limit for page in pages)
    assert len(pages) == -(-len(expected) // limit)


def test_pages_of_a_filtered_timeline(seeded: Seeded) -> None:
    """A cursor carries the filters' meaning: paging evidence two at a time sees all of it."""
    expected = [
        e["id"] for e in expected_entries(seeded.env, seeded.task) if e["kind"] == "evidence"
    ]
    entries, pages = walk(seeded.cli, seeded.task, "--kind", "evidence", "--limit", "2")
    assert [e["id"] for e in entries] == expected
    assert {page["total"] for page in pages} == {len(expected)}


def test_the_default_page_size(seeded: Seeded) -> None:
    """Without --limit a page holds TIMELINE_LIMIT_DEFAULT entries at most."""
    data = timeline(seeded.cli, seeded.task).data
    assert data["limit"] == bounds.TIMELINE_LIMIT_DEFAULT == 50
    assert data["returned"] == min(data["total"], 50)
    assert bounds.TIMELINE_LIMIT_MAX == 500


# Anchors ---------------------------------------------------------------------------------------


def test_anchor_by_id_returns_neighbours_and_marks_the_anchor(seeded: Seeded) -> None:
    """N entries before, the anchor (marked), N after; counts of everything either side."""
    expected = [e["id"] for e in expected_entries(seeded.env, seeded.task)]
    index = expected.index(seeded.long_id)
    data = timeline(
        seeded.cli, seeded.task, "--anchor", seeded.long_id, "--before", "2", "--after", "3"
    ).data
    assert [e["id"] for e in data["entries"]] == expected[index - 2 : index + 4]
    assert [e["id"] for e in data["entries"] if e.get("anchor")] == [seeded.long_id]
    assert data["anchor"] == {
        "id": seeded.long_id,
        "at": data["entries"][2]["at"],
        "before": index,
        "after": len(expected) - index - 1,
        "matchesFilters": True,
    }
    assert data["total"] == len(expected)
    assert data["nextCursor"] is not None
    rest = timeline(seeded.cli, seeded.task, "--cursor", data["nextCursor"], "--limit", "500").data
    assert [e["id"] for e in rest["entries"]] == expected[index + 4 :]


def test_anchor_edges_and_defaults(seeded: Seeded) -> None:
    """At the first entry nothing precedes it; 0/0 is the anchor alone; the default is 10/10."""
    expected = [e["id"] for e in expected_entries(seeded.env, seeded.task)]
    first = timeline(seeded.cli, seeded.task, "--anchor", expected[0], "--before", "5").data
    assert [e["id"] for e in first["entries"]] == expected[:11]
    alone = timeline(
        seeded.cli, seeded.task, "--anchor", expected[-1], "--before", "0", "--after", "0"
    ).data
    assert [e["id"] for e in alone["entries"]] == [expected[-1]]
    assert alone["nextCursor"] is None
    answer = timeline(seeded.cli, seeded.task, "--anchor", seeded.answered + ":answer").data
    assert answer["anchor"]["id"] == seeded.answered + ":answer"
    assert bounds.TIMELINE_AROUND_DEFAULT == 10


def test_anchor_outside_the_filters_is_shown_with_filtered_neighbours(seeded: Seeded) -> None:
    """Anchoring on evidence while showing commands: the anchor stays, marked as not matching."""
    everything = expected_entries(seeded.env, seeded.task)
    position = [e["id"] for e in everything].index(seeded.secret_id)
    commands = [e["id"] for e in everything if e["kind"] == "command"]
    earlier = [e["id"] for e in everything[:position] if e["kind"] == "command"]
    data = timeline(
        seeded.cli, seeded.task, "--anchor", seeded.secret_id, "--kind", "command",
        "--before", "2", "--after", "2",
    ).data  # fmt: skip
    ids = [e["id"] for e in data["entries"]]
    assert ids == [*earlier[-2:], seeded.secret_id, *commands[len(earlier) : len(earlier) + 2]]
    assert data["anchor"]["matchesFilters"] is False
    assert data["total"] == len(commands)


def test_anchor_by_date_is_the_first_entry_at_or_after_it(seeded: Seeded) -> None:
    """A date anchors on the first matching entry at or after it; past the end is not found."""
    everything = expected_entries(seeded.env, seeded.task)
    target = everything[len(everything) // 2]
    first_at = next(e for e in everything if e["at"] == target["at"])
    data = timeline(
        seeded.cli, seeded.task, "--anchor", target["at"], "--before", "1", "--after", "1"
    ).data
    assert data["anchor"]["id"] == first_at["id"]
    day = timeline(seeded.cli, seeded.task, "--anchor", "2000-01-01", "--after", "2").data
    assert [e["id"] for e in day["entries"]] == [e["id"] for e in everything[:3]]
    later = f"{int(everything[-1]['at'][:4]) + 1}-01-01"
    missing = assert_invalid(timeline(seeded.cli, seeded.task, "--anchor", later), code=3)
    assert missing["error"]["code"] == "not_found"
    unknown = "ev_" + "0" * 26
    refused = assert_invalid(timeline(seeded.cli, seeded.task, "--anchor", unknown), code=3)
    assert refused["error"]["code"] == "not_found"


# Refusals --------------------------------------------------------------------------------------


BAD_ARGS = [
    ("--kind", "bogus"),
    ("--kind", "Phase"),
    ("--since", "2024-13-01"),
    ("--since", "yesterday"),
    ("--until", "2024-05-01T25:00"),
    ("--since", "2024-05-02", "--until", "2024-05-01"),
    ("--since", "2" * 100),
    ("--limit", "0"),
    ("--limit", "501"),
    ("--limit", "-1"),
    ("--limit", "ten"),
    ("--cursor", "garbage"),
    ("--cursor", ""),
    ("--cursor", "x" * 2000),
    ("--cursor", "WyJhIiwiYiJd.0123456789abcdef01234567"),
    ("--anchor", "not-a-date"),
    ("--anchor", "hyp_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ("--anchor", "ev_01arz3ndektsv4rrffq69g5fav"),
    ("--before", "2"),
    ("--anchor", "2024-05-01", "--before", "251"),
    ("--anchor", "2024-05-01", "--after", "-1"),
    ("--anchor", "2024-05-01", "--cursor", "abc.def"),
    ("--actor", ""),
    ("--bogus",),
]


@pytest.mark.parametrize("args", BAD_ARGS, ids=lambda a: " ".join(a)[:40])
def test_bad_input_is_exit_4_with_one_envelope(seeded: Seeded, args: tuple[str, ...]) -> None:
    """Every malformed option is refused with invalid_input, never a traceback."""
    envelope = assert_invalid(timeline(seeded.cli, seeded.task, *args))
    assert envelope["error"]["code"] == "invalid_input"
    human = seeded.cli("case", "timeline", seeded.task, *args, human=True)
    assert human.code == 4
    assert "Traceback" not in human.stdout + human.stderr
    assert "invalid_input" in human.stderr


def test_a_cursor_works_only_where_it_was_issued(seeded: Seeded) -> None:
    """Edited, foreign-case and other-filter cursors are refused; the real one works."""
    cursor = timeline(seeded.cli, seeded.task, "--limit", "2").data["nextCursor"]
    assert timeline(seeded.cli, seeded.task, "--limit", "2", "--cursor", cursor).code == 0
    body, check = cursor.split(".")
    flipped = check[:-1] + ("0" if check[-1] != "0" else "1")
    payload = json.dumps(["2000-01-01T00:00:00.000Z", "ev_" + "0" * 26], separators=(",", ":"))
    forged = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=") + "." + check
    for bad in (f"{body}.{flipped}", forged, body, cursor + "x", cursor[1:]):
        refused = assert_invalid(timeline(seeded.cli, seeded.task, "--cursor", bad))
        assert refused["error"]["code"] == "invalid_input", bad
    other_filters = timeline(seeded.cli, seeded.task, "--kind", "evidence", "--cursor", cursor)
    assert_invalid(other_filters)
    other = seeded.cli.open("another case")
    assert_invalid(timeline(seeded.cli, other, "--cursor", cursor))


def test_unknown_case_is_not_found(seeded: Seeded) -> None:
    assert_invalid(timeline(seeded.cli, "task_01ARZ3NDEKTSV4RRFFQ69G5FAV"), code=3)
    assert_invalid(timeline(seeded.cli, "task_nope"), code=4)


# A reader ---------------------------------------------------------------------------------------


def test_reading_writes_nothing(seeded: Seeded) -> None:
    """Every file's bytes and mtime, and every directory's mtime, are unchanged afterwards."""
    roots = (Path(seeded.env["CORTEX_STATE_DIR"]), seeded.repo / ".git")
    before = files_state(*roots)
    expected = expected_entries(seeded.env, seeded.task)
    cursor = timeline(seeded.cli, seeded.task, "--limit", "3").data["nextCursor"]
    runs = [
        timeline(seeded.cli, seeded.task, "--limit", "3", "--cursor", cursor),
        timeline(seeded.cli, seeded.task, "--anchor", expected[5]["id"], "--kind", "receipt"),
        timeline(seeded.cli, seeded.task, "--anchor", "2000-01-01"),
        seeded.cli("case", "timeline", seeded.task, human=True),
        timeline(seeded.cli, seeded.task, "--kind", "nope"),
    ]
    assert [run.code for run in runs] == [0, 0, 0, 0, 4]
    assert files_state(*roots) == before


def test_works_from_any_directory(seeded: Seeded, tmp_path: Path) -> None:
    """Outside the repository the case is still found (like status)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = timeline(seeded.cli, seeded.task, "--kind", "receipt", cwd=elsewhere).data
    assert data["total"] == 1
    assert data["entries"][0]["standing"] == "stale"


def test_only_committed_lines_are_read(cli: Cli, task: str) -> None:
    """Bytes past the committed length (an interrupted write) are ignored and reported."""
    before = timeline(cli, task).data
    ledger = case_path(cli.env, task) / "evidence.jsonl"
    ghost = Evidence(
        id=new_id("ev"),
        timestamp="2000-01-01T00:00:00.000Z",
        source=Source(tool="agent", actor="ghost"),
        claim="never committed",
        revision=before["revision"] + 1,
    )
    with ledger.open("ab") as handle:
        handle.write(encode(ghost) + b"\n" + b'{"id":"ev_torn')
    after = timeline(cli, task).data
    assert after["entries"] == before["entries"]
    assert after["total"] == before["total"]
    assert any("uncommitted" in warning for warning in after["warnings"])


@pytest.mark.process
def test_a_held_case_lock_does_not_block_reading(cli: Cli, task: str) -> None:
    """The timeline takes no lock: it answers while another process holds the case lock."""
    with case_lock_held(cli, task):
        cli.env["CORTEX_LOCK_TIMEOUT"] = "0.2"
        started = time.monotonic()
        assert timeline(cli, task).data["total"] > 0
        assert time.monotonic() - started < 5


# Golden -----------------------------------------------------------------------------------------


def test_golden_cards_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON cards and the text of a seeded case match tests/golden/ byte for byte.

    Set CORTEX_UPDATE_GOLDEN=1 to rewrite the files after an intended change, and review the
    diff like code.
    """
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)  # rich would style the text for a terminal
    from cortex.cli.render import render
    from cortex.kernel.envelope import success
    from cortex.kernel.views.timeline.page import timeline as run

    kernel, task = seed_golden(tmp_path)
    result = run(
        kernel, task, kinds=[], actor=None, since=None, until=None, anchor=None, before=None,
        after=None, limit=500, cursor=None,
    )  # fmt: skip
    envelope = success("case.timeline", result)
    cards = normalized(json.dumps(json.loads(encode(envelope)), indent=2, sort_keys=True)) + "\n"
    out, err = io.StringIO(), io.StringIO()
    render(envelope, out, err, {})
    text = normalized(out.getvalue())
    assert err.getvalue() == ""
    for name, actual in (("timeline.json", cards), ("timeline.txt", text)):
        path = GOLDEN / name
        if os.environ.get("CORTEX_UPDATE_GOLDEN"):
            path.parent.mkdir(exist_ok=True)
            path.write_text(actual)
        assert actual == path.read_text(), f"{name} differs from the golden file"
    # The golden case has what the test promises: a stale receipt, a pending decision, and
    # redacted text, while the secrets themselves are nowhere.
    for needle in ('"standing": "stale"', '"status": "pending"', "password=[REDACTED]"):
        assert needle in cards
    assert TOKEN not in cards + text
    assert PASSWORD not in cards + text
    assert "RAW-BODY-MARKER" not in cards + text


# Bounded memory ----------------------------------------------------------------------------------


def inflate(env: dict[str, str], task: str, lines: int) -> None:
    """Append `lines` committed evidence records to a case, as if written one by one."""
    directory = case_path(env, task)
    case = json.loads((directory / "case.json").read_text())
    revision = case["revision"]
    start = 1_700_000_000_000
    with (directory / "evidence.jsonl").open("ab") as handle:
        chunk: list[bytes] = []
        for n in range(lines):
            millis = start + n
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000))
            record = Evidence(
                id=new_id("ev", millis),
                timestamp=f"{at}.{millis % 1000:03d}Z",
                source=Source(tool="agent", actor="bulk"),
                claim=f"bulk observation number {n} about the checkout redirect",
                revision=revision,
                prev="0" * 64,
            )
            chunk.append(encode(record) + b"\n")
            if len(chunk) == 10_000:
                handle.write(b"".join(chunk))
                chunk = []
        handle.write(b"".join(chunk))
    ledger = case["ledgers"]["evidence"]
    ledger["bytes"] = (directory / "evidence.jsonl").stat().st_size
    ledger["count"] += lines
    (directory / "case.json").write_text(json.dumps(case, indent=2) + "\n")


def peak_rss_kib(cli: Cli, argv: list[str]) -> tuple[int, dict[str, Any]]:
    """Run one command in a fresh interpreter; its peak resident memory and its data."""
    probe = (
        "import io, resource, sys\n"
        "from cortex.main import main\n"
        "out = io.StringIO()\n"
        f"assert main({argv!r}, stdout=out) == 0, out.getvalue()[:2000]\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "sys.stdout.write(str(peak) + '\\n' + out.getvalue())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    peak, envelope = proc.stdout.decode().split("\n", 1)
    scale = 1024 if sys.platform == "darwin" else 1  # bytes there, KiB on Linux
    return int(peak) // scale, json.loads(envelope)["data"]


def check_bounded(cli: Cli, lines: int) -> None:
    small = cli.open("a small case")
    big = cli.open("a big case")
    inflate(cli.env, big, lines)
    modes = [["--limit", "500"], ["--anchor", "2023-11-15", "--before", "250", "--after", "250"]]
    for mode in modes:
        baseline, _ = peak_rss_kib(cli, ["case", "timeline", small, *mode[:2], "--json"])
        peak, data = peak_rss_kib(cli, ["case", "timeline", big, *mode, "--json"])
        assert data["total"] >= lines
        assert data["returned"] <= 501
        # Holding every entry would cost hundreds of bytes each (over 50 MiB at 200k lines).
        assert peak - baseline < 24 * 1024, (mode, baseline, peak)


@pytest.mark.process
def test_memory_stays_bounded_on_a_large_case(cli: Cli) -> None:
    """200k ledger lines: the page and the anchor window cost about what a small case does."""
    check_bounded(cli, 200_000)


@pytest.mark.slow
def test_memory_stays_bounded_on_a_million_lines(cli: Cli) -> None:
    """The issue's size: one million evidence lines."""
    check_bounded(cli, 1_000_000)
