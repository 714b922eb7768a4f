"""Attacks on the end capture's reuse of the start capture's tree id (verification.md §3).

Each test changes something between W0 and W1 that alters the tree id `git add -A` would give
while the digest and the stat identity of the plain settings files stay as they were, and then
requires W1 (`same_as=W0`) to give exactly what a fresh capture gives. Every test first checks
that the change does alter a fresh capture's tree id, so it can fail. Real git, real files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from capture_kit import fields
from conftest import Cli, configure_verifiers, git, ready_to_verify
from verify_kit import approve, edit

from cortex.workspace import capture as capture_module
from cortex.workspace import git_settings, working_tree
from cortex.workspace.capture import capture

Change = Callable[[Path, dict[str, str]], None]


def crlf_file(repo: Path) -> None:
    """An untracked CRLF text file: its blob depends on line-ending settings and attributes."""
    (repo / "notes.txt").write_bytes(b"one\r\ntwo\r\n")


def reuse_after(repo: Path, env: dict[str, str], change: Change) -> None:
    """W0, `change`, then W1 with W0 given: W1 must be what a fresh capture is."""
    first = capture(str(repo), env)
    assert first.tree is not None, first.tree_reason
    change(repo, env)
    fresh = capture(str(repo), env)
    assert fresh.digest == first.digest, "the attack must leave the digest alone"
    assert fresh.tree != first.tree, "the change must matter to the tree id, or this proves nothing"
    assert fields(capture(str(repo), env, same_as=first)) == fields(fresh)


def written_tree(repo: Path, env: dict[str, str], scratch: Path) -> str:
    """What `git add -A && git write-tree` gives, on a copy of the index (.git stays as it is)."""
    index = scratch / "index"
    shutil.copyfile(repo / ".git" / "index", index)
    private = {**env, "GIT_INDEX_FILE": str(index)}
    git(repo, "add", "-A", env=private)
    return git(repo, "write-tree", env=private)


def test_a_file_pulled_in_by_include_path_is_watched(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """include.path names a file outside every listed settings file; a verifier edits it."""
    crlf_file(repo)
    extra = tmp_path / "extra.cfg"
    extra.write_text("# nothing yet\n")
    git(repo, "config", "include.path", str(extra), env=env)

    def change(_repo: Path, _env: dict[str, str]) -> None:
        extra.write_text("[core]\n\tautocrlf = true\n")

    reuse_after(repo, env, change)


def test_an_include_on_branch_is_watched(repo: Path, env: dict[str, str]) -> None:
    """includeIf "onbranch:" switches settings when the branch changes and HEAD's commit does
    not: `git checkout -b` alone changes no settings file and no digested byte."""
    crlf_file(repo)
    (repo / ".git" / "crlf.cfg").write_text("[core]\n\tautocrlf = true\n")
    git(repo, "config", "includeIf.onbranch:other.path", "crlf.cfg", env=env)

    def change(repo: Path, env: dict[str, str]) -> None:
        git(repo, "checkout", "-q", "-b", "other", env=env)

    reuse_after(repo, env, change)


def test_an_attributes_file_named_by_the_configuration_is_watched(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """core.attributesFile points away from the XDG default, to a file a verifier edits."""
    crlf_file(repo)
    attributes = tmp_path / "attributes"
    attributes.write_text("# none\n")
    git(repo, "config", "core.attributesFile", str(attributes), env=env)

    def change(_repo: Path, _env: dict[str, str]) -> None:
        attributes.write_text("*.txt text\n")

    reuse_after(repo, env, change)


@pytest.mark.parametrize("folder", ["", "docs/"])
def test_an_ignored_gitattributes_is_watched(repo: Path, env: dict[str, str], folder: str) -> None:
    """git applies a .gitattributes that .gitignore hides, and status never lists it: a verifier
    that writes one beside a listed file changes that file's blob and no digested byte."""
    (repo / ".gitignore").write_text(".gitattributes\n")
    git(repo, "add", ".gitignore", env=env)
    git(repo, "commit", "-q", "-m", "ignore attributes", env=env)
    (repo / folder).mkdir(exist_ok=True)
    (repo / folder / "notes.txt").write_bytes(b"one\r\ntwo\r\n")

    def change(repo: Path, _env: dict[str, str]) -> None:
        (repo / folder / ".gitattributes").write_text("*.txt text\n")

    reuse_after(repo, env, change)


def test_a_clean_filter_outside_the_repository_is_watched(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A clean filter's program lives outside the repository and the settings files: a verifier
    that rewrites it changes every filtered blob and nothing the digest reads."""
    (repo / "notes.txt").write_text("hello\n")
    script = tmp_path / "clean.sh"
    script.write_text("cat\n")
    git(repo, "config", "filter.up.clean", f"sh {script}", env=env)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.txt filter=up\n")

    def change(_repo: Path, _env: dict[str, str]) -> None:
        script.write_text("tr a-z A-Z\n")

    reuse_after(repo, env, change)


def test_a_replaced_head_tree_does_not_change_the_tree_id(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """`git replace` makes cat-file answer HEAD's tree with another tree's entries; git add and
    write-tree never consult replacements. Holds: status compares with the same replaced tree,
    so the entries it lists patch the rebuilt tree back to what the index and disk hold."""
    (repo / "lib.py").write_text("x = 1\n")
    git(repo, "add", "lib.py", env=env)
    git(repo, "commit", "-q", "-m", "lib", env=env)
    real_head_tree = git(repo, "rev-parse", "HEAD^{tree}", env=env)
    blob = git(repo, "hash-object", "-w", "--stdin", env=env)  # an empty file
    other = subprocess.run(
        ["git", "mktree"],
        cwd=repo,
        env=env,
        input=f"100644 blob {blob}\tapp.py\n100644 blob {blob}\tlib.py\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "replace", real_head_tree, other, env=env)
    # The replacement is in force for readers (status and cat-file see HEAD as `other`).
    assert git(repo, "ls-tree", real_head_tree, env=env) == git(repo, "ls-tree", other, env=env)
    (repo / "new.py").write_text("y = 2\n")
    taken = capture(str(repo), env)
    assert taken.head_tree == real_head_tree
    assert taken.tree == written_tree(repo, env, tmp_path)


def _common_attributes(repo: Path, env: dict[str, str]) -> None:
    common = Path(git(repo, "rev-parse", "--git-common-dir", env=env))
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "attributes").write_text("*.txt text\n")


def _worktree_config(repo: Path, env: dict[str, str]) -> None:
    git(repo, "config", "--worktree", "core.autocrlf", "true", env=env)


@pytest.mark.parametrize("change", [_common_attributes, _worktree_config])
def test_a_linked_worktree_watches_its_common_and_own_settings(
    repo: Path, env: dict[str, str], tmp_path: Path, change: Change
) -> None:
    """In a `git worktree add` checkout (`.git` is a `gitdir:` file, settings split between the
    common directory and the worktree's own), a change to either is seen."""
    git(repo, "config", "extensions.worktreeConfig", "true", env=env)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked), env=env)
    crlf_file(linked)
    reuse_after(linked, env, change)


def test_a_verifier_that_switches_branch_unbinds_its_batch(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """End to end: an `onbranch:` include turns autocrlf on when the verifier checks out a new
    branch at the same commit; the batch must not bind the tree W0 saw."""
    (repo / ".git" / "crlf.cfg").write_text("[core]\n\tautocrlf = true\n")
    git(repo, "config", "includeIf.onbranch:other.path", "crlf.cfg", env=env)
    configure_verifiers(repo, env, {"unit": ["git", "checkout", "-q", "-b", "other"]})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo, "print('fixed')\r\n")
    out = cli("case", "verify", task)
    batch = out.data["batch"]
    assert batch["binding"] == "unbound", out.stdout
    assert any(
        reason.startswith("the tree id changed during the run") for reason in batch["reasons"]
    )


def test_a_file_rewritten_while_w0_hashes_it_does_not_lend_w0_its_tree(
    repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process the agent left running rewrites a listed file after W0's digest read it and
    before hash-object does, then puts it back: W0 would pair the digest of one content with
    the tree of another, and W1, seeing the first content again, would take that tree. (The
    other process is simulated at the one point it must act; hash-object, git and the files
    are real.)"""
    notes = repo / "notes.txt"
    notes.write_text("first\n")
    time.sleep(0.05)  # the rewrites below fall in a later tick of the file system's clock
    original = working_tree.working_tree_id
    raced = []

    def racing(seen: working_tree.Seen, head: str, helpers: working_tree.Helpers) -> object:
        notes.write_text("other\n")
        try:
            return original(seen, head, helpers)
        finally:
            notes.write_text("first\n")
            raced.append(True)

    monkeypatch.setattr(working_tree, "working_tree_id", racing)
    # Nothing hashed while the digest reads: hash-object reads the file after the rewrite.
    monkeypatch.setattr(working_tree.Helpers, "feed", lambda _self, _path: None)
    first = capture(str(repo), env)
    monkeypatch.undo()
    assert raced
    fresh = capture(str(repo), env)
    assert fresh.digest == first.digest
    assert fresh.tree is not None
    # W0's tree is honest, or absent; either way W1 must be what a fresh capture is.
    assert first.tree in (fresh.tree, None), "W0 named the tree of bytes its digest never read"
    assert fields(capture(str(repo), env, same_as=first)) == fields(fresh)


class FifoConfig:
    """A FIFO where git looks for its XDG configuration, and a thread that writes `text` to
    every reader that opens it: its stat data never change, whatever it says."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        self.path = path
        self.text = b""
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped:
            fd = os.open(self.path, os.O_WRONLY)  # waits for a reader
            with contextlib.suppress(OSError):
                os.write(fd, self.text)
            os.close(fd)

    def stop(self) -> None:
        self.stopped = True
        with contextlib.suppress(OSError):  # releases a writer still waiting for a reader
            os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
        self.thread.join(5)


def test_a_settings_file_that_is_a_fifo_has_no_identity(
    repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO for a configuration file can say something new to each reader under one inode and
    size, and reading it would take what git was to read: it has no identity, so W1 rebuilds
    (its helpers start) and is what a fresh capture is."""
    crlf_file(repo)
    served = FifoConfig(Path(env["XDG_CONFIG_HOME"]) / "git" / "config")
    try:
        assert git_settings.identity(str(repo), env) is None
        first = capture(str(repo), env)
        assert first.tree is not None, first.tree_reason
        assert first.settings is None
        started: list[bool] = []
        real = working_tree.Helpers

        def counted(*args: Any, **kwargs: Any) -> Any:
            started.append(True)
            return real(*args, **kwargs)

        monkeypatch.setattr(capture_module, "Helpers", counted)
        again = capture(str(repo), env, same_as=first)
        assert started, "W1 took W0's tree with a FIFO among the settings files"
        assert fields(again) == fields(capture(str(repo), env))
    finally:
        served.stop()


def test_helpers_that_cannot_start_late_leave_w1_without_a_tree(
    repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """W1 starts its helpers only once its digest differs from W0's; if git cannot start then,
    W1 must say why it has no tree id, never fall back on W0's."""
    crlf_file(repo)
    first = capture(str(repo), env)
    assert first.tree is not None, first.tree_reason
    (repo / "notes.txt").write_bytes(b"one\r\nthree\r\n")

    def cannot_start(*_args: object, **_kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(capture_module, "Helpers", cannot_start)
    again = capture(str(repo), env, same_as=first)
    assert again.digest != first.digest
    assert again.tree is None
    assert again.tree_reason is not None
    assert "could not start" in again.tree_reason


def test_a_dot_git_that_is_a_fifo_does_not_hang_the_settings_identity(tmp_path: Path) -> None:
    """`.git` swapped for a FIFO: reading it as a gitdir file must not wait for a writer."""
    root = tmp_path / "work"
    root.mkdir()
    os.mkfifo(root / ".git")
    answered: list[str | None] = []
    reader = threading.Thread(
        target=lambda: answered.append(git_settings.identity(str(root), {"HOME": str(tmp_path)})),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    try:
        assert not reader.is_alive(), "git_settings.identity hung on a FIFO named .git"
        assert len(answered) == 1
    finally:
        if reader.is_alive():  # release the blocked open so the thread can end
            os.close(os.open(root / ".git", os.O_WRONLY | os.O_NONBLOCK))
