"""The todo-free verifier, tested the supported way: `cortex.verifiers.testing`, no case store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cortex_todo_free import READ_MAX, TodoFreeVerifier, __version__

from cortex.verifiers import testing


def write(root: Path, name: str, text: str) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return name


def test_changed_files_without_markers_pass(tmp_path: Path) -> None:
    files = [write(tmp_path, "app.py", "print('hi')\n"), write(tmp_path, "lib/util.py", "x = 1\n")]
    context = testing.make_context(tmp_path, changed=files)
    outcome = testing.run(TodoFreeVerifier(), "todo-free", context)
    assert outcome.status == "passed"
    assert outcome.summary == "todo-free: no TODO/FIXME marker in 2 changed file(s)"
    assert outcome.contracts == {"app.py": "passed", "lib/util.py": "passed"}
    assert outcome.findings == []
    assert outcome.raw is None


def test_a_marker_fails_and_names_its_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "app.py", "def f():\n    # TODO handle the empty cart\n    return 1\n")
    write(tmp_path, "ok.py", "TODOS = []  # a name, not a marker\n")
    context = testing.make_context(tmp_path, changed=["app.py", "ok.py"])
    outcome = testing.run(TodoFreeVerifier(), "todo-free", context)
    assert outcome.status == "failed"
    assert outcome.contracts == {"app.py": "failed", "ok.py": "passed"}
    assert [f.claim for f in outcome.findings] == [
        "app.py still has TODO/FIXME markers at line(s) 2"
    ]
    assert outcome.raw == b"app.py:2: # TODO handle the empty cart\n"
    assert outcome.details == {"files": 2, "withMarkers": 1, "skipped": 0}


def test_only_changed_files_are_read(tmp_path: Path) -> None:
    write(tmp_path, "old.py", "# FIXME: not this task's\n")
    write(tmp_path, "new.py", "y = 2\n")
    outcome = testing.run(
        TodoFreeVerifier(), "todo-free", testing.make_context(tmp_path, changed=["new.py"])
    )
    assert outcome.status == "passed"


def test_a_named_marker_replaces_the_defaults(tmp_path: Path) -> None:
    write(tmp_path, "app.py", "# TODO later\n# HACK around the bug\n")
    context = testing.make_context(tmp_path, changed=["app.py"])
    outcome = testing.run(TodoFreeVerifier(), "todo-free:HACK", context)
    assert outcome.status == "failed"
    assert outcome.raw == b"app.py:2: # HACK around the bug\n"


def test_a_marker_that_is_not_a_word_is_refused_before_running(tmp_path: Path) -> None:
    with pytest.raises(testing.CheckRefusedError) as refused:
        testing.run(TodoFreeVerifier(), "todo-free:no.dots", testing.make_context(tmp_path))
    assert "must be a word" in refused.value.reason


def test_unknown_changes_block_rather_than_pass(tmp_path: Path) -> None:
    context = testing.make_context(
        tmp_path, start=testing.fake_capture(reason="the workspace is not a git repository")
    )
    assert context.changed is None
    outcome = testing.run(TodoFreeVerifier(), "todo-free", context)
    assert outcome.status == "blocked"
    assert outcome.notes == ["the workspace is not a git repository"]


def test_deleted_binary_and_linked_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"TODO\0\1\2")
    write(tmp_path, "outside.txt", "TODO\n")
    os.symlink(tmp_path / "outside.txt", tmp_path / "link.txt")
    context = testing.make_context(tmp_path, changed=["gone.py", "blob.bin", "link.txt"])
    outcome = testing.run(TodoFreeVerifier(), "todo-free", context)
    assert outcome.status == "passed"
    assert outcome.details["skipped"] == 3
    assert outcome.notes == ["3 changed file(s) not read: deleted, not a regular file, binary"]


def test_a_huge_file_is_read_only_up_to_the_bound(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x\n" * (READ_MAX // 2) + b"TODO past the bound\n")
    outcome = testing.run(
        TodoFreeVerifier(), "todo-free", testing.make_context(tmp_path, changed=["big.txt"])
    )
    assert outcome.status == "passed"
    assert outcome.notes == [f"1 file(s) read only up to {READ_MAX} bytes"]


def test_what_is_kept_is_bounded_like_any_plugin_outcome(tmp_path: Path) -> None:
    """`testing.run` returns the outcome as the kernel keeps it: findings cut to their bound."""
    files = [write(tmp_path, f"f{n}.py", "# FIXME\n") for n in range(30)]
    outcome = testing.run(
        TodoFreeVerifier(), "todo-free", testing.make_context(tmp_path, changed=files)
    )
    assert outcome.status == "failed"
    assert len(outcome.contracts) == 30
    assert len(outcome.findings) == 20


def test_the_receipt_version_is_the_package_version() -> None:
    assert TodoFreeVerifier.version == __version__
