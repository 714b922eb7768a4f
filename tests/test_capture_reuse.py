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
from typing import Any

import pytest
from capture_kit import fields, mirrored, prepare, steady_capture, steady_repo
from conftest import Cli, configure_verifiers, git, ready_to_verify
from verify_kit import approve, edit

from cortex.workspace import capture as capture_module
from cortex.workspace.capture import capture


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


# -- W1 and the index's hidden entries -------------------------------------------------------
# `git ls-files -v` names the entries git status does not look at (assume-unchanged,
# skip-worktree), whose files the digest reads itself. W1 reuses W0's list only when it reads the
# same private index file, unchanged, before and after its status.


def refuse(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("the end capture listed the index again")


def test_the_same_index_is_not_listed_again(
    repo: Path, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(repo)
    steady_repo(repo, env)
    git(repo, "update-index", "--assume-unchanged", "lib.py", env=env)
    first = steady_capture(repo, env, tmp_path / "mirror")
    assert [path for path, _ in first.hidden] == [b"lib.py"]
    monkeypatch.setattr(capture_module, "spawn_git", refuse)
    again = mirrored(repo, env, tmp_path / "mirror", same_as=first)
    assert fields(again) == fields(first)
    (repo / "lib.py").write_text("VALUE = 2\n")
    edited = mirrored(repo, env, tmp_path / "mirror", same_as=first)
    assert edited.digest != first.digest, "an edit to a hidden entry's file must count"


def _hide_in_the_real_index(repo: Path, env: dict[str, str], _mirror: Path) -> None:
    git(repo, "update-index", "--assume-unchanged", "lib.py", env=env)


def _hide_in_the_mirror(repo: Path, env: dict[str, str], mirror: Path) -> None:
    """The private copy itself edited (its name, which follows the real index, unchanged)."""
    (copy,) = [p for p in mirror.iterdir() if p.name.startswith("index-")]
    hidden = {**env, "GIT_INDEX_FILE": str(copy)}
    git(repo, "update-index", "--assume-unchanged", "lib.py", env=hidden)


@pytest.mark.parametrize("hide", [_hide_in_the_real_index, _hide_in_the_mirror])
def test_an_entry_hidden_between_the_captures_is_listed(
    repo: Path,
    env: dict[str, str],
    tmp_path: Path,
    hide: Callable[[Path, dict[str, str], Path], None],
) -> None:
    """Hidden after W0, then edited: status no longer lists the file, so only a fresh listing
    of the hidden entries puts the edit in W1's digest."""
    prepare(repo)
    steady_repo(repo, env)
    mirror = tmp_path / "mirror"
    first = steady_capture(repo, env, mirror)
    assert first.hidden == []
    hide(repo, env, mirror)
    (repo / "lib.py").write_text("VALUE = 2\n")
    again = mirrored(repo, env, mirror, same_as=first)
    fresh = mirrored(repo, env, mirror)
    assert fresh.digest != first.digest, "the edit must matter, or this proves nothing"
    assert fields(again) == fields(fresh)


def test_an_entry_hidden_while_w1_runs_is_listed(
    repo: Path, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy edited after W1 chose to reuse W0's list but before its status read the copy:
    W1 must see that the copy changed under it, and list it after all."""
    prepare(repo)
    steady_repo(repo, env)
    mirror = tmp_path / "mirror"
    first = steady_capture(repo, env, mirror)
    from cortex.workspace.git import run_git as real_run

    def meanwhile(argv: list[str], **options: Any) -> Any:
        if "status" in argv:
            _hide_in_the_mirror(repo, env, mirror)
            (repo / "lib.py").write_text("VALUE = 2\n")
        return real_run(argv, **options)

    monkeypatch.setattr(capture_module, "spawn_git", refuse)
    monkeypatch.setattr(capture_module, "run_git", meanwhile)
    again = mirrored(repo, env, mirror, same_as=first)
    monkeypatch.undo()
    fresh = mirrored(repo, env, mirror)
    assert fresh.digest != first.digest, "the edit must matter, or this proves nothing"
    assert fields(again) == fields(fresh)
