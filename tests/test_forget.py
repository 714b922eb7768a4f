"""`cortex case forget` end to end: a person at a terminal, real processes, real kills.

After a forget no file under the state root or the cache holds the forgotten text (the ledger,
the blob, the recall index), and `audit` passes and names the tombstone. A forget killed at any
point leaves the old state or the new one; the next write finishes a committed one.
docs/design/storage.md, "Forgetting a record".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path, committed_state
from crash_kit import Run, watch
from trust_kit import at_terminal, detached

pytestmark = pytest.mark.process  # its tests start cortex processes

FORGET_CHILD = str(CHILDREN / "forget_child.py")
APPENDER = str(CHILDREN / "crash_child.py")
SECRET = "the vault phrase is zzquokka7731 marmalade"  # noqa: S105 - made up
TOKEN = b"quokka7731"
"""A piece of the secret as every file stores it: the recall index keeps terms lower-cased and
prefix-compressed, so the test looks for a part no neighbouring term can share."""
BLOB = b"raw tool output\nzzquokka7731 appeared here\n"
DEBRIS = {"uncommitted_tail", "stray_file", "pending_journal", "orphan_blob", "forget_pending"}


def holding(*roots: Path) -> list[str]:
    """Every file under `roots` whose bytes hold the secret's token."""
    return [
        str(path.relative_to(root.parent))
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink() and TOKEN in path.read_bytes()
    ]


@pytest.fixture
def roots(env: dict[str, str], tmp_path: Path) -> tuple[Path, Path]:
    env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
    return Path(env["CORTEX_STATE_DIR"]), tmp_path / "cache"


def with_secret(cli: Cli, tmp_path: Path) -> tuple[str, str, str]:
    """A case with the secret in a card-worthy record, its raw blob, and a hypothesis card that
    quotes it; the recall index built. (task, record id, raw id)."""
    task = cli.open("Find why the vault rotates", "--mode", "investigate")
    raw = tmp_path / "out.txt"
    raw.write_bytes(BLOB)
    record = cli(
        "case", "evidence", "add", task, "--claim", SECRET, "--confidence", "high",
        "--raw-file", str(raw),
    ).data["evidence"]  # fmt: skip
    plan = cli(
        "case", "plan", task, "--hypothesis", "the vault rotates hourly :: a log shows otherwise",
        "--support", f"1={record['id']}", "--uncertainty", "none",
    ).data  # fmt: skip
    hypothesis = plan["hypotheses"][0]["id"]
    out = cli("case", "resolve", task, hypothesis, "--status", "rejected", "--reason",
              "the log shows daily", "--evidence", record["id"])  # fmt: skip
    assert out.code == 0, out.stdout
    assert cli("recall", "reindex").code == 0
    return task, record["id"], record["rawRef"].rsplit("/", 1)[1]


def forget_at_terminal(
    env: dict[str, str], repo: Path, task: str, target: str, typed: str | None = None
) -> tuple[Any, bytes]:
    args = ["case", "forget", task, target, "--reason", "pasted by mistake"]
    return at_terminal(args, env, repo, typed=typed or target, prompt=b"to forget it")


class TestForget:
    def test_no_file_under_the_state_root_or_the_cache_holds_the_text(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, roots: tuple[Path, Path]
    ) -> None:
        task, record, raw = with_secret(cli, tmp_path)
        held = holding(*roots)
        assert any("evidence.jsonl" in p for p in held), held
        assert any(raw in p for p in held), held
        assert any(p.startswith("cache/recall/") for p in held), held  # the grep can see it
        before = cli("recall", "zzquokka7731").data["total"]
        assert before >= 2  # the evidence card and the hypothesis card quoting it
        out, shown = forget_at_terminal(env, repo, task, record)
        assert out.code == 0, (out.stdout, out.stderr, shown)
        assert SECRET.encode() in shown  # the person saw what they were forgetting
        data = out.data
        assert data["record"] == record
        assert data["removedRaw"][0]["id"] == raw
        assert data["warnings"] == []
        assert holding(*roots) == []
        report = cli("case", "audit", task).data
        assert report["ok"] is True
        assert report["warnings"] == []
        (tombstone,) = report["tombstones"]
        assert tombstone["record"] == record
        assert tombstone["via"] == "cli-tty"
        assert tombstone["removedLine"] == data["removedLine"]
        assert "pasted by mistake" in tombstone["reason"]
        assert cli("recall", "zzquokka7731").data["total"] == 0
        shown_record = cli("case", "read-evidence", task, record).data["evidence"]
        assert shown_record["claim"] == "(forgotten)"
        assert cli("recall", "rebuild", "--verify").data["verify"]["agree"] is True

    def test_only_the_raw_output_is_forgotten_when_a_raw_id_is_given(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, roots: tuple[Path, Path]
    ) -> None:
        task = cli.open("Keep the claim, drop the output")
        raw = tmp_path / "out.txt"
        raw.write_bytes(BLOB)
        record = cli("case", "evidence", "add", task, "--claim", "the build log is noisy",
                     "--raw-file", str(raw)).data["evidence"]  # fmt: skip
        raw_id = record["rawRef"].rsplit("/", 1)[1]
        out, _ = forget_at_terminal(env, repo, task, raw_id)
        assert out.code == 0, out.stdout
        assert out.data["what"] == "raw"
        kept = cli("case", "read-evidence", task, record["id"]).data["evidence"]
        assert kept["claim"] == "the build log is noisy"
        assert kept["rawRef"] is None
        assert holding(*roots) == []
        assert cli("case", "audit", task).data["ok"] is True


class TestWhoMayForget:
    def test_without_a_terminal_nothing_is_forgotten(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task, record, _ = with_secret(cli, tmp_path)
        before = committed_state(case_path(env, task))
        out = detached(["case", "forget", task, record, "--reason", "x"], env, repo)
        assert out.code == 5, out.stdout
        assert "person" in out.envelope["error"]["message"]
        piped = cli("case", "forget", task, record, "--reason", "x")
        assert piped.code == 5
        assert committed_state(case_path(env, task)) == before

    def test_typing_something_else_cancels(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task, record, _ = with_secret(cli, tmp_path)
        before = committed_state(case_path(env, task))
        out, _ = forget_at_terminal(env, repo, task, record, typed=record[:-1])
        assert out.code == 5, out.stdout
        assert committed_state(case_path(env, task)) == before

    def test_a_prefix_or_a_record_of_another_case_is_refused(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task, record, _ = with_secret(cli, tmp_path)
        other = cli.open("Another case")
        elsewhere = cli("case", "note", other, "nothing secret").data["evidence"]["id"]
        before = committed_state(case_path(env, task))
        out, _ = forget_at_terminal(env, repo, task, record[:12])
        assert out.code == 4, out.stdout
        assert "whole" in out.envelope["error"]["message"]
        out, _ = forget_at_terminal(env, repo, task, elsewhere)
        assert out.code == 3, out.stdout
        out, _ = forget_at_terminal(env, repo, task, "ev_" + "7" * 26)
        assert out.code == 3, out.stdout
        assert committed_state(case_path(env, task)) == before
        assert cli("case", "audit", other).data["tombstones"] == []


# Crashes and races ------------------------------------------------------------------------------

# (point, passes): a forget appends to two ledgers (the forget record, the audit line) and
# writes the journal and case.json through write_atomic.
POINTS = [
    ("txn.fence", 1),
    ("txn.staged", 1),
    ("snapshot.tmp_created", 2),
    ("snapshot.tmp_written", 2),
    ("snapshot.tmp_synced", 2),
    ("snapshot.replaced", 2),
    ("snapshot.dir_synced", 2),
    ("txn.journaled", 1),
    ("ledger.before_write", 2),
    ("ledger.torn_write", 2),
    ("ledger.written", 2),
    ("ledger.synced", 2),
    ("txn.appended", 1),
    ("txn.published", 1),
    ("txn.case_replaced", 1),
    ("forget.rewritten", 1),
    ("forget.removed", 1),
    ("recall.dropped", 1),
]


def run_forget(env: dict[str, str], repo: Path, argv: list[str]) -> Run:
    """forget_child.py with `[task, record, point, skip]`."""
    task, target, point, skip = argv
    return watch([sys.executable, FORGET_CHILD, point, skip, str(repo), task, target], env)


@pytest.mark.parametrize("stop", POINTS, ids=[point for point, _ in POINTS])
def test_a_forget_killed_at_each_point_is_undone_or_finished(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, stop: tuple[str, int]
) -> None:
    point, passes = stop
    env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
    roots = (Path(env["CORTEX_STATE_DIR"]), tmp_path / "cache")
    task, record, _ = with_secret(cli, tmp_path)
    for skip in range(passes):
        run = run_forget(env, repo, [task, record, point, str(skip)])
        assert run.killed, f"{point} (skip {skip}) was never reached"
        report = cli("case", "audit", task).data
        assert report["ok"] is True, report
        assert {w["code"] for w in report["warnings"]} <= DEBRIS
        committed = len(report["tombstones"]) == 1 or any(
            w["code"] == "forget_pending" for w in report["warnings"]
        )
        # The next writer rolls the forget back or finishes it.
        assert cli("case", "note", task, "after the kill").code == 0
        report = cli("case", "audit", task).data
        assert report["warnings"] == [], report
        if committed:
            assert len(report["tombstones"]) == 1
            break
        assert report["tombstones"] == []
        assert holding(roots[0]) != []
    else:
        # Never committed: a forget run now does it all.
        out = run_forget(env, repo, [task, record, "-", "0"])
        assert out.acked, "the retried forget failed"
    cli("recall", "reindex")
    assert holding(*roots) == []
    assert cli("case", "audit", task).data["tombstones"][0]["record"] == record


def test_a_forget_racing_appends_loses_none_of_them(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    """Writers appending evidence while a forget runs: every acknowledged record is kept, the
    forgotten one is gone, and the ledger audits."""
    task, record, _ = with_secret(cli, tmp_path)
    commands = [
        [["case", "evidence", "add", task, "--claim", f"writer {n} seq {i}"] for i in range(80)]
        for n in range(2)
    ]
    writers = [
        subprocess.Popen(
            [sys.executable, APPENDER, "never", "0", str(repo), json.dumps(batch)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for batch in commands
    ]
    assert writers[0].stdout is not None
    first = writers[0].stdout.readline().decode()  # appends are under way: forget now
    assert first.startswith("ACK "), first
    forgot = run_forget(env, repo, [task, record, "-", "0"])
    acked: list[str] = []
    for n, proc in enumerate(writers):
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr.decode()
        lines = ([first] if n == 0 else []) + stdout.decode().splitlines()
        acked += [json.loads(x[4:])["data"]["evidence"]["id"] for x in lines if x[:4] == "ACK "]
    assert forgot.acked
    assert len(acked) == 160
    timeline = cli("case", "timeline", task, "--kind", "evidence", "--limit", "500").data
    order = [entry["id"] for entry in timeline["entries"]]
    assert set(acked) <= set(order)
    marker = order.index(forgot.acked[0]["forgetRecord"])
    written = [i for i, entry in enumerate(order) if entry in set(acked)]
    assert min(written) < marker < max(written)  # the forget really ran between appends
    report = cli("case", "audit", task).data
    assert report["ok"] is True
    assert [t["record"] for t in report["tombstones"]] == [record]
    assert holding(*roots) == []


class TestShared:
    """docs/design/sharing.md, "Forgotten records": the next share publishes the tombstone."""

    def test_the_next_share_publishes_the_tombstone_and_history_keeps_what_was_pushed(
        self, tmp_path: Path
    ) -> None:
        from share_kit import case_objects, make_machine, make_remote

        remote = make_remote(tmp_path)
        a = make_machine(tmp_path, "a", remote)
        b = make_machine(tmp_path, "b", remote)
        task = a.ok("case", "open", "Find why the vault rotates")["taskId"]
        raw = tmp_path / "out.txt"
        raw.write_bytes(BLOB)
        record = a.ok("case", "evidence", "add", task, "--claim", SECRET, "--raw-file", str(raw))
        record_id = record["evidence"]["id"]
        a.ok("case", "share", task)
        b.ok("case", "fetch", task)  # b holds the line before the forget
        out, _ = forget_at_terminal(a.env, a.repo, task, record_id)
        assert out.code == 0, out.stdout
        a.ok("case", "share", task)
        tip = a.git("rev-parse", f"refs/cortex/cases/{task}^{{tree}}")
        listing = a.git("ls-tree", "-r", tip).splitlines()
        contents = b"".join(
            subprocess.run(
                ["git", "cat-file", "blob", line.split()[2]],
                cwd=a.repo, env=a.env, capture_output=True, check=True,
            ).stdout
            for line in listing
        )  # fmt: skip
        assert TOKEN not in contents  # the shared state holds the tombstone, not the text
        assert b"(forgotten)" in contents
        assert TOKEN in case_objects(remote, a.env)  # what was pushed before stays in history
        # A machine fetching now gets the tombstone; one that fetched before is told to forget.
        c = make_machine(tmp_path, "c", remote)
        c.ok("case", "fetch", task)
        report = c.ok("case", "audit", task)
        assert [t["record"] for t in report["tombstones"]] == [record_id]
        assert holding(Path(c.env["CORTEX_STATE_DIR"])) == []
        b.ok("case", "fetch", task)
        warned = b.ok("case", "audit", task)
        assert "forgotten_elsewhere" in {w["code"] for w in warned["warnings"]}
        out, _ = forget_at_terminal(b.env, b.repo, task, record_id)
        assert out.code == 0, out.stdout
        assert holding(Path(b.env["CORTEX_STATE_DIR"])) == []
        again = b.ok("case", "audit", task)
        assert again["warnings"] == []
        assert len(again["tombstones"]) == 1

    def test_every_copy_of_a_record_is_forgotten(self, tmp_path: Path) -> None:
        """A forked state directory shares its twin's earlier records: after a fetch, this
        machine holds the record twice (its own line, and the fork's copy); both go."""
        from share_kit import copy_machine, make_machine, make_remote

        remote = make_remote(tmp_path)
        a = make_machine(tmp_path, "a", remote)
        task = a.ok("case", "open", "Find why the vault rotates")["taskId"]
        record_id = a.ok("case", "evidence", "add", task, "--claim", SECRET)["evidence"]["id"]
        twin = copy_machine(tmp_path, a, "twin")
        twin.ok("case", "note", task, "the twin goes its own way")
        twin.ok("case", "share", task)
        a.ok("case", "note", task, "and so does the original")
        a.ok("case", "fetch", task)
        state = Path(a.env["CORTEX_STATE_DIR"])
        assert len([p for p in holding(state) if p.endswith("evidence.jsonl")]) == 2
        out, _ = forget_at_terminal(a.env, a.repo, task, record_id)
        assert out.code == 0, out.stdout
        assert len(out.data["copies"]) == 2
        assert holding(state) == []
        report = a.ok("case", "audit", task)
        assert len(report["tombstones"]) == 2
        assert report["warnings"] == [] or {w["code"] for w in report["warnings"]} == {
            "replica_forked"
        }
