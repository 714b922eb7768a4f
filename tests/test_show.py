"""`cortex case show`: one consistent screen for a person.

The golden test renders the seeded case of `golden_case` (a stale receipt, a pending decision,
redacted and sensitive records) with a fixed clock. The others check the parts `show` adds to
`status` against the case files read independently, that the newest records are the newest in
commit order whatever the ledgers' sizes, and that a snapshot is consistent while another
process writes.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path, configure_verifiers, git, ready_to_verify, tree_state
from golden_case import GOLDEN, PASSWORD, SENSITIVE_CLAIM, TOKEN, normalized, seed_golden

from cortex.cases.bounds import SHOW_RECENT_MAX
from cortex.cases.records import encode


def show(cli: Cli, task: str, *, cwd: Path | None = None) -> dict[str, Any]:
    out = cli("case", "show", task, cwd=cwd)
    assert out.code == 0, out.stdout
    data: dict[str, Any] = out.data
    return data


def ledger_ids(env: dict[str, str], task: str) -> list[tuple[int, str, str]]:
    """(revision, id, ledger) of every committed ledger line, read with the json module."""
    path = case_path(env, task)
    case = json.loads((path / "case.json").read_text())
    rows = []
    for name in ("evidence", "commands", "phases"):
        committed = (path / f"{name}.jsonl").read_bytes()[: case["ledgers"][name]["bytes"]]
        for line in committed.decode().splitlines():
            record = json.loads(line)
            rows.append((record["revision"], record["id"], name))
    return rows


def test_show_adds_stepper_time_hypotheses_and_activity_to_status(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('ok')"]})
    task = ready_to_verify(cli)
    cli("case", "evidence", "add", task, "--claim", SENSITIVE_CLAIM, "--sensitive")
    cli("case", "evidence", "add", task, "--claim", f"deploy log shows {TOKEN}")
    data = show(cli, task)
    status = cli("case", "status", task).data
    # Everything status says, said the same way.
    for key, value in status.items():
        assert data[key] == value, key
    assert [s["phase"] for s in data["stepper"]] == [
        "orienting", "investigating", "planned", "changing", "verifying", "persisting", "complete",
    ]  # fmt: skip
    states = {s["phase"]: s["state"] for s in data["stepper"]}
    assert states["planned"] == "done"
    assert states["changing"] == "current"
    assert states["verifying"] == "next"
    assert set(data["time"]["inPhase"]) >= {"orienting", "investigating", "planned", "changing"}
    assert data["time"]["current"]["phase"] == "changing"
    [hypothesis] = data["hypotheses"]
    assert hypothesis["disproof"] == "a run shows it right"
    assert hypothesis["status"] == "open"
    recent = data["recent"]
    rows = ledger_ids(env, task)
    assert recent["total"] == len(rows)
    assert recent["totals"] == data["counts"]
    assert recent["returned"] == len(rows)  # a small case shows everything
    # Newest first, in commit order.
    expected = sorted(rows, key=lambda r: (r[0], r[1].split("_")[1]), reverse=True)
    assert [item["id"] for item in recent["items"]] == [r[1] for r in expected]
    titles = " ".join(item["title"] for item in recent["items"])
    assert SENSITIVE_CLAIM not in titles
    assert "(sensitive)" in titles
    assert TOKEN not in json.dumps(data)


def test_the_stepper_of_other_modes_and_endings(cli: Cli) -> None:
    task = cli.open("look into it", "--mode", "investigate")
    steps = [s["phase"] for s in show(cli, task)["stepper"]]
    assert "changing" not in steps
    cli("case", "abort", task, "--reason", "not needed")
    stepper = show(cli, task)["stepper"]
    assert stepper[-1] == {"phase": "abandoned", "state": "current"}
    assert {s["state"] for s in stepper[:-1]} <= {"done", "skipped"}
    assert {"phase": "orienting", "state": "done"} in stepper


def test_a_paused_case_marks_the_phase_it_paused_in(cli: Cli) -> None:
    task = cli.open()
    cli("case", "decision", "request", task, "--question", "Which way?",
        "--option", "a=This way", "--option", "b=That way")  # fmt: skip
    data = show(cli, task)
    assert data["status"] == "needs_human_decision"
    paused = [s for s in data["stepper"] if s["state"] == "paused"]
    assert paused == [{"phase": data["pausedFrom"], "state": "paused"}]
    assert data["pendingDecision"]["question"] == "Which way?"


def test_recent_is_bounded_and_exactly_the_newest(cli: Cli, env: dict[str, str]) -> None:
    task = cli.open()
    for n in range(SHOW_RECENT_MAX // 2 + 20):
        out = cli("case", "note", task, f"note {n}")
        assert out.code == 0
    data = show(cli, task)
    recent = data["recent"]
    rows = ledger_ids(env, task)
    assert recent["total"] == len(rows) > SHOW_RECENT_MAX
    assert recent["returned"] == SHOW_RECENT_MAX
    assert recent["truncated"] is True
    newest = sorted(rows, key=lambda r: (r[0], r[1].split("_")[1]), reverse=True)
    assert [i["id"] for i in recent["items"]] == [r[1] for r in newest[:SHOW_RECENT_MAX]]


def test_show_is_findable_from_any_directory(cli: Cli, tmp_path: Path) -> None:
    task = cli.open()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert show(cli, task, cwd=elsewhere)["taskId"] == task


def test_show_writes_nothing(cli: Cli, env: dict[str, str], repo: Path) -> None:
    task = cli.open()
    cli("case", "note", task, "one")
    before = tree_state(Path(env["CORTEX_STATE_DIR"])), tree_state(repo / ".git")
    show(cli, task)
    assert cli("case", "show", task, human=True).code == 0
    assert (tree_state(Path(env["CORTEX_STATE_DIR"])), tree_state(repo / ".git")) == before


def test_uncommitted_ledger_bytes_are_not_shown(cli: Cli, env: dict[str, str]) -> None:
    task = cli.open()
    cli("case", "note", task, "committed")
    ledger = case_path(env, task) / "evidence.jsonl"
    with ledger.open("ab") as handle:
        handle.write(b'{"id":"ev_01J00000000000000000000000","torn":')
    data = show(cli, task)
    assert "ev_01J00000000000000000000000" not in json.dumps(data["recent"])
    assert data["warnings"], "the torn tail is reported"


def test_unknown_and_malformed_ids(cli: Cli) -> None:
    missing = cli("case", "show", "task_01J00000000000000000000000")
    assert (missing.code, missing.error_code) == (3, "not_found")
    bad = cli("case", "show", "../etc")
    assert (bad.code, bad.error_code) == (4, "invalid_input")


@pytest.mark.process
def test_a_snapshot_stays_consistent_while_another_process_writes(cli: Cli) -> None:
    """Every view's newest command is the audit line of its newest evidence, never a mix."""
    task = cli.open()
    writer = subprocess.Popen(
        [sys.executable, str(CHILDREN / "writer.py"), "append", "0", "150", str(cli.cwd), task],
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen = 0
    try:
        while writer.poll() is None or seen < 5:
            data = show(cli, task)
            seen += 1
            recent = data["recent"]
            assert recent["totals"] == data["counts"]
            assert recent["total"] == sum(data["counts"].values())
            evidence = [i for i in recent["items"] if i["kind"] == "evidence"]
            commands = [i for i in recent["items"] if i["kind"] == "command"]
            if evidence:
                assert commands[0]["title"].endswith(evidence[0]["id"])
            if writer.poll() is not None and seen >= 5:
                break
    finally:
        out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err.decode()
    assert b'"other": []' in out


def stable(text: str, tmp_path: Path) -> str:
    """What varies between runs: temp paths, commit ids and the store id derived from them."""
    text = text.replace(str(tmp_path), "<tmp>")
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<hex12>", text)
    return normalized(text)


def test_golden_json_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON and the text of the seeded case match tests/golden/ byte for byte.

    Set CORTEX_UPDATE_GOLDEN=1 to rewrite the files after an intended change, and review the
    diff like code.
    """
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    from cortex.cli.render import render
    from cortex.kernel.envelope import success
    from cortex.kernel.views.show import show as run

    kernel, task = seed_golden(tmp_path)
    envelope = success("case.show", run(kernel, task))
    document = json.loads(encode(envelope))
    # Paths under the test's temporary directory differ from run to run.
    as_json = stable(json.dumps(document, indent=2, sort_keys=True), tmp_path) + "\n"
    out, err = io.StringIO(), io.StringIO()
    render(envelope, out, err, {"COLUMNS": "100"})
    text = stable(out.getvalue(), tmp_path)
    assert err.getvalue() == ""
    for name, actual in (("show.json", as_json), ("show.txt", text)):
        path = GOLDEN / name
        if os.environ.get("CORTEX_UPDATE_GOLDEN"):
            path.write_text(actual)
        assert actual == path.read_text(), f"{name} differs from the golden file"
    for needle in ('"stale": true', '"status": "pending"', "password=[REDACTED]", "(sensitive)"):
        assert needle in as_json, needle
    assert TOKEN not in as_json + text
    assert PASSWORD not in as_json + text
    assert SENSITIVE_CLAIM not in as_json + text


@pytest.mark.process
def test_git_is_only_read(cli: Cli, env: dict[str, str], repo: Path) -> None:
    """A case with receipts captures the work tree to judge them; .git stays byte-identical."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('ok')"]})
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    verify_env = {**env, "CORTEX_APPROVE_COMMANDS": "1"}
    assert Cli(verify_env, repo)("case", "verify", task).code == 0
    git(repo, "status", "--porcelain", env=env)  # settle git's own index refresh first
    before = tree_state(repo / ".git")
    data = show(cli, task)
    assert data["verification"]["status"] == "verified"
    assert tree_state(repo / ".git") == before
