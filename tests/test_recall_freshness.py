"""Freshness labels in a real repository: git mv, rm and edits, computed when shown.

Evidence naming a file records its blob id and HEAD when it is written. Shown later (show,
timeline, handoff, recall), each record gets `[moved: a -> b]`, `[stale: missing a]`,
`[changed since 1a2b3c4]` or nothing, exactly; the record itself is always still there. With
git gone, the label says so.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, git

FILES = {"moved.py": "m\n", "removed.py": "r\n", "edited.py": "e\n", "same.py": "s\n"}


def data(out: Outcome) -> Any:
    assert out.code == 0, (out.stdout, out.stderr)
    return out.data


@pytest.fixture
def named(cli: Cli, env: dict[str, str], repo: Path) -> dict[str, Any]:
    """One notable record per file, made at one commit; then the files move on."""
    for name, text in FILES.items():
        (repo / name).write_text(text)
    git(repo, "add", *FILES, env=env)
    git(repo, "commit", "-qm", "files", env=env)
    head = git(repo, "rev-parse", "HEAD", env=env)
    task = cli.open("Track the files")
    ids = {}
    for name in FILES:
        out = cli("case", "evidence", "add", task, "--claim", f"webhook logic in {name}",
                  "--file", name, "--confidence", "high")  # fmt: skip
        ids[name] = data(out)["evidence"]["id"]
        location = out.data["evidence"]["location"]
        assert location["head"] == head
        assert location["blob"] == git(repo, "hash-object", name, env=env)
    git(repo, "mv", "moved.py", "renamed.py", env=env)
    git(repo, "rm", "-q", "removed.py", env=env)
    (repo / "edited.py").write_text("e\nmore\n")
    git(repo, "commit", "-qam", "move on", env=env)
    return {"task": task, "ids": ids, "head": head}


EXPECTED = {
    "moved.py": ["[moved: moved.py -> renamed.py]"],
    "removed.py": ["[stale: missing removed.py]"],
    "edited.py": ["[changed since {head}]"],
    "same.py": [],
}


def expected(head: str) -> dict[str, list[str]]:
    return {
        name: [label.format(head=head[:7]) for label in want] for name, want in EXPECTED.items()
    }


def test_labels_in_recall_and_every_view(cli: Cli, named: dict[str, Any]) -> None:
    task, ids, want = named["task"], named["ids"], expected(named["head"])
    cards = {c["id"]: c for c in data(cli("recall", "webhook logic", "--limit", "20"))["cards"]}
    timeline = {e["id"]: e for e in data(cli("case", "timeline", task))["entries"]}
    recent = {i["id"]: i for i in data(cli("case", "show", task))["recent"]["items"]}
    handoff = data(cli("case", "handoff", task))
    records = {r["id"]: r for r in handoff["packet"]["evidence"]["records"]}
    for name, record_id in ids.items():
        # Every record is still shown, stale or not.
        assert record_id in cards
        assert record_id in timeline
        assert record_id in recent
        assert cards[record_id]["labels"] == want[name], name
        assert timeline[record_id].get("labels", []) == want[name], name
        assert recent[record_id].get("labels", []) == want[name], name
        assert records[record_id]["labels"] == want[name], name
    text = cli("case", "timeline", task, human=True).stdout
    assert "[moved: moved.py -> renamed.py]" in text
    assert "- Labels: \\[stale: missing removed.py\\]" in handoff["markdown"]


def test_an_uncommitted_move_and_a_plain_delete(cli: Cli, env: dict[str, str], repo: Path) -> None:
    (repo / "a.py").write_text("a\n")
    (repo / "b.py").write_text("b\n")
    git(repo, "add", "a.py", "b.py", env=env)
    git(repo, "commit", "-qm", "two", env=env)
    task = cli.open("Uncommitted")
    first = data(cli("case", "evidence", "add", task, "--claim", "in a", "--file", "a.py"))
    second = data(cli("case", "evidence", "add", task, "--claim", "in b", "--file", "b.py"))
    git(repo, "mv", "a.py", "c.py", env=env)  # staged, not committed
    (repo / "b.py").unlink()  # gone from the work tree only
    entries = {e["id"]: e for e in data(cli("case", "timeline", task))["entries"]}
    assert entries[first["evidence"]["id"]]["labels"] == ["[moved: a.py -> c.py]"]
    assert entries[second["evidence"]["id"]]["labels"] == ["[stale: missing b.py]"]


def test_without_git_the_label_says_so(
    cli: Cli, env: dict[str, str], named: dict[str, Any], tmp_path: Path
) -> None:
    bare = tmp_path / "no-git-bin"
    bare.mkdir()
    for tool in ("sh", "env"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bare / tool)
    blind = Cli({**env, "PATH": str(bare)}, cli.cwd)
    entries = {e["id"]: e for e in data(blind("case", "timeline", named["task"]))["entries"]}
    ids = named["ids"]
    assert entries[ids["removed.py"]]["labels"] == ["[stale: missing removed.py; git unavailable]"]
    assert entries[ids["moved.py"]]["labels"] == ["[stale: missing moved.py; git unavailable]"]
    # What needs no git is still said: the content changed.
    assert entries[ids["edited.py"]]["labels"] == [f"[changed since {named['head'][:7]}]"]


def test_a_head_this_repository_no_longer_has(cli: Cli, env: dict[str, str], repo: Path) -> None:
    (repo / "gone.py").write_text("g\n")
    git(repo, "checkout", "-q", "-b", "side", env=env)
    git(repo, "add", "gone.py", env=env)
    git(repo, "commit", "-qm", "side", env=env)
    side = git(repo, "rev-parse", "HEAD", env=env)
    task = cli.open("Lost history")
    record = data(cli("case", "evidence", "add", task, "--claim", "x", "--file", "gone.py"))
    git(repo, "checkout", "-q", "main", env=env)
    git(repo, "branch", "-q", "-D", "side", env=env)
    git(repo, "reflog", "expire", "--expire=now", "--all", env=env)
    git(repo, "gc", "-q", "--prune=now", env=env)
    entries = {e["id"]: e for e in data(cli("case", "timeline", task))["entries"]}
    label = entries[record["evidence"]["id"]]["labels"]
    assert label == [f"[stale: missing gone.py; head {side[:7]} unknown]"]


def test_showing_labels_writes_nothing_under_git(
    cli: Cli, repo: Path, named: dict[str, Any]
) -> None:
    from conftest import tree_state

    before = tree_state(repo / ".git")
    for view in (("case", "timeline"), ("case", "show"), ("case", "handoff")):
        data(cli(*view, named["task"]))
    data(cli("recall", "webhook logic"))
    assert tree_state(repo / ".git") == before
