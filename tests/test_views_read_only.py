"""Every view is read-only: under an inotify watcher of the state directory and the repository
(`.git` included), no view creates, writes, renames, deletes or re-permissions anything.

A snapshot comparison would miss a file written and restored, or a temporary file created and
removed; the watcher sees each of those as it happens. The case is a rich one: receipts made
stale by an edit (so views capture the work tree through git), raw output, sensitive and
redacted records, and a pending decision.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import Cli, configure_verifiers, ready_to_verify
from fswatch import Watcher

TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"


@pytest.fixture
def seeded(cli: Cli, env: dict[str, str], repo: Path) -> tuple[Cli, str, dict[str, str]]:
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('3 passed')"]})
    task = ready_to_verify(cli)
    ids: dict[str, str] = {}
    out = cli("case", "evidence", "add", task, "--claim", f"log shows {TOKEN}", "--raw-file", "-",
              stdin=b"raw tool output\n")  # fmt: skip
    ids["evidence"] = out.data["evidence"]["id"]
    ids["raw"] = out.data["evidence"]["rawRef"]
    cli("case", "evidence", "add", task, "--claim", "private detail", "--sensitive")
    # A notable record: the recall index exists, and reading it is watched too.
    cli("case", "evidence", "add", task, "--claim", "fixed in app.py", "--file", "app.py",
        "--confidence", "high")  # fmt: skip
    (repo / "app.py").write_text("print('fixed')\n")
    verifier = Cli({**env, "CORTEX_APPROVE_COMMANDS": "1"}, repo)
    assert verifier("case", "verify", task).code == 0
    (repo / "app.py").write_text("print('edited after the proof')\n")  # the receipt goes stale
    asked = cli("case", "decision", "request", task, "--question", "Ship it?",
                "--option", "yes=Ship", "--option", "no=Hold")  # fmt: skip
    assert asked.code == 0, asked.stdout
    ids["decision"] = asked.data["decision"]["id"]
    return cli, task, ids


VIEWS = [
    ("case", "status", "{task}"),
    ("case", "show", "{task}"),
    ("case", "list"),
    ("case", "timeline", "{task}"),
    ("case", "timeline", "{task}", "--kind", "receipt", "--actor", "agent-1"),
    ("case", "timeline", "{task}", "--anchor", "{evidence}", "--before", "3", "--after", "3"),
    ("case", "timeline", "{task}", "--since", "2000-01-01", "--until", "2999-01-01"),
    ("case", "handoff", "{task}"),
    ("case", "handoff", "{task}", "--compact"),
    ("case", "read-evidence", "{task}", "{evidence}"),
    ("case", "read-artifact", "{task}", "{raw}"),
    ("case", "metrics", "{task}"),
    ("case", "metrics"),
    ("case", "sessions"),
    ("case", "sessions", "--active", "--query", "login"),
    ("case", "overview"),
    ("case", "decision", "list", "{task}"),
    ("case", "audit", "{task}"),
    ("case", "attest", "{task}"),
    ("config",),
    ("recall", "log shows private detail"),
    ("recall", "fixed", "--kind", "evidence", "--budget", "50"),
]


@pytest.mark.process
@pytest.mark.parametrize("human", [False, True], ids=["json", "text"])
def test_no_view_writes_anything(
    seeded: tuple[Cli, str, dict[str, str]], env: dict[str, str], repo: Path, human: bool
) -> None:
    cli, task, ids = seeded
    roots = (Path(env["CORTEX_STATE_DIR"]), repo, Path(env["HOME"]) / ".cache" / "cortex")
    with Watcher(*roots) as watcher:
        assert watcher.events() == []
        for view in VIEWS:
            argv = [word.format(task=task, **ids) for word in view]
            out = cli(*argv, human=human)
            # attest refuses a stale batch (exit 5); every other view answers.
            assert out.code in {0, 5}, (argv, out.stdout, out.stderr)
            assert watcher.events() == [], argv
    # The watcher itself works: a real write is seen.
    with Watcher(*roots) as watcher:
        assert cli("case", "note", task, "a write").code == 0
        assert any("evidence.jsonl" in event for event in watcher.events())


def test_the_watcher_sees_a_file_written_and_restored(tmp_path: Path) -> None:
    """What a before/after snapshot would miss."""
    target = tmp_path / "file"
    target.write_bytes(b"same")
    with Watcher(tmp_path) as watcher:
        target.write_bytes(b"other")
        target.write_bytes(b"same")
        assert any(event.startswith("modify") for event in watcher.events())
