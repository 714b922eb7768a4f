"""The end capture takes the start capture's tree id only when nothing it depends on changed.

docs/design/verification.md §3: W1 reads everything again for its digest but rebuilds no tree
when its digest and git's settings equal W0's. Each change below alters the tree id `git add -A`
would give while leaving some or all of the digest alone; W1 must then give exactly what a fresh
capture gives. Real git, real files; the only fake is a fault injected to prove the shortcut is
taken (the helpers refuse to start).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Cli, configure_verifiers, git, ready_to_verify
from verify_kit import approve, edit

from cortex.workspace import capture as capture_module
from cortex.workspace.capture import Capture, capture


def prepare(repo: Path) -> None:
    """A tracked edit, an untracked executable script and an untracked CRLF text file: each
    one's blob or mode depends on a setting, not only on its bytes."""
    (repo / "app.py").write_text("print('edited')\n")
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (repo / "notes.txt").write_bytes(b"one\r\ntwo\r\n")


def fields(taken: Capture) -> tuple[object, ...]:
    return (taken.head, taken.digest, taken.tree, taken.head_tree, taken.tree_reason)


def test_the_same_state_reuses_the_tree_without_starting_helpers(
    repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(repo)
    first = capture(str(repo), env)
    assert first.tree is not None, first.tree_reason

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the end capture started the tree-id helpers")

    monkeypatch.setattr(capture_module, "Helpers", refuse)
    again = capture(str(repo), env, same_as=first)
    assert fields(again) == fields(first)


def _edit(repo: Path, _env: dict[str, str]) -> None:
    (repo / "notes.txt").write_bytes(b"one\r\nthree\r\n")


def _file_mode(repo: Path, env: dict[str, str]) -> None:
    git(repo, "config", "core.fileMode", "false", env=env)


def _autocrlf_repo(repo: Path, env: dict[str, str]) -> None:
    git(repo, "config", "core.autocrlf", "true", env=env)


def _autocrlf_home(_repo: Path, env: dict[str, str]) -> None:
    (Path(env["HOME"]) / ".gitconfig").write_text("[core]\n\tautocrlf = true\n")


def _autocrlf_xdg(_repo: Path, env: dict[str, str]) -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "git"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config").write_text("[core]\n\tautocrlf = true\n")


def _xdg_attributes(_repo: Path, env: dict[str, str]) -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "git"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attributes").write_text("*.txt text\n")


def _info_attributes(repo: Path, _env: dict[str, str]) -> None:
    info = repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.txt text\n")


def _info_attributes_in_place(repo: Path, _env: dict[str, str]) -> None:
    """An existing file rewritten in place, same size, its mtime put back: the ctime still moves."""
    path = repo / ".git" / "info" / "attributes"
    before = path.stat()
    with path.open("r+b") as handle:
        handle.write(b"*.txt text\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize(
    "change",
    [
        _edit,
        _file_mode,
        _autocrlf_repo,
        _autocrlf_home,
        _autocrlf_xdg,
        _xdg_attributes,
        _info_attributes,
        _info_attributes_in_place,
    ],
)
def test_a_change_between_the_captures_gives_a_fresh_tree(
    repo: Path, env: dict[str, str], change: Callable[[Path, dict[str, str]], None]
) -> None:
    prepare(repo)
    if change is _info_attributes_in_place:
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text("*.txt -tex\n")
    first = capture(str(repo), env)
    assert first.tree is not None, first.tree_reason
    change(repo, env)
    fresh = capture(str(repo), env)
    assert fresh.tree != first.tree, "the change must matter to the tree id, or this proves nothing"
    assert fields(capture(str(repo), env, same_as=first)) == fields(fresh)


def test_a_verifier_that_changes_a_setting_unbinds_its_batch(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """The digest stays equal (an untracked script's bytes and bit do not change) but what git
    would commit does: the batch must not bind the tree it saw before the run."""
    configure_verifiers(repo, env, {"unit": ["git", "config", "core.fileMode", "false"]})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    out = cli("case", "verify", task)
    batch = out.data["batch"]
    assert batch["binding"] == "unbound", out.stdout
    reasons = batch["reasons"]
    assert any(reason.startswith("the tree id changed during the run") for reason in reasons)
