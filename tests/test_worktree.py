"""The workspace capture and its digest, proven on real git repositories (verification.md §1).

Every scenario builds a real repository in tmp_path and calls `capture(str(repo), env)` with the
test's isolated environment: nothing is mocked, git is the real git. The matrix is the one the
design promises: a rerun and a touch give the same digest; every change to what a verifier would
run (content, mode, staging, type, odd names, HEAD) gives a different one; ignored files, the
case store and the user's display configuration change nothing; `.git` is never written.

Where a path's change shows only in the bytes cortex reads itself (an untracked file, a second
edit of an already-modified file), the test edits twice: the status record git prints stays the
same, so only a correct read of the right path can move the digest.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import add_submodule, git, make_repo

from cortex.workspace.capture import DIGEST_VERSION, Capture, capture, committed_changes

Action = Callable[[Path, dict[str, str]], None]
Snapshot = dict[str, tuple[str, int, str, int]]

BINARY = bytes(range(256)) * 4


# -- helpers ---------------------------------------------------------------------------------


def take(repo: Path, env: dict[str, str], *, exclude: Path | None = None) -> Capture:
    """A capture of `repo` that must be bound (the test fails with the reason otherwise)."""
    result = capture(str(repo), env, exclude=None if exclude is None else str(exclude))
    assert result.bound, result.reason
    assert result.reason is None
    assert result.digest is not None
    assert result.digest.startswith("sha256:")
    assert len(result.digest) == len("sha256:") + 64
    return result


def head_of(repo: Path, env: dict[str, str]) -> str:
    """HEAD's commit id according to git."""
    return git(repo, "rev-parse", "HEAD", env=env)


def make_work(path: Path, env: dict[str, str]) -> Path:
    """A repository with tracked text, a tracked binary, an untracked file and ignored files.

    Tracked: app.py, lib/util.py, data.bin, .gitignore. Untracked: notes.txt. Ignored (present
    before the first capture): debug.log and build/out.o.
    """
    repo = make_repo(path, env)
    (repo / "lib").mkdir()
    (repo / "lib" / "util.py").write_text("def util() -> int:\n    return 1\n")
    (repo / "data.bin").write_bytes(BINARY)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "work", env=env)
    (repo / "notes.txt").write_text("untracked notes\n")
    (repo / "debug.log").write_text("ignored log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\x7fELF")
    return repo


@pytest.fixture
def work(tmp_path: Path, env: dict[str, str]) -> Path:
    """The repository of `make_work`."""
    return make_work(tmp_path / "work", env)


def snapshot(root: Path) -> Snapshot:
    """Every path under `root`: (kind, size, sha256 of the bytes, mtime_ns).

    Directories are included with their mtime, so a lock file created and removed again (which
    changes its directory's mtime) is caught as well as any file written.
    """
    state: Snapshot = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            state[str(path.relative_to(root))] = ("dir", 0, "", info.st_mtime_ns)
        elif stat.S_ISREG(info.st_mode):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            state[str(path.relative_to(root))] = ("file", info.st_size, digest, info.st_mtime_ns)
        else:
            state[str(path.relative_to(root))] = ("other", info.st_size, "", info.st_mtime_ns)
    return state


def touch_all(repo: Path, when: int) -> int:
    """Set atime and mtime of every work-tree file (not `.git`) to `when`; return how many."""
    count = 0
    for path in repo.rglob("*"):
        if ".git" in path.relative_to(repo).parts or path.is_symlink():
            continue
        os.utime(path, (when, when))
        count += 1
    return count


def write_script(path: Path, body: str) -> Path:
    """An executable shell script at `path`."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def framed(*parts: bytes) -> bytes:
    """The digest's length-prefixed framing, written independently of cortex."""
    return b"".join(len(part).to_bytes(8, "big") + part for part in parts)


def no_git_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`env` with PATH pointing to an empty directory, so no `git` can be found."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return {**env, "PATH": str(empty)}


# -- 1. same state, same digest --------------------------------------------------------------


class TestSameDigest:
    """What must not move the digest: a rerun, a touch, ignored files, the case store."""

    def test_rerun_gives_the_same_capture(self, work: Path, env: dict[str, str]) -> None:
        """Two captures of an unchanged (dirty) tree agree on everything they bind."""
        (work / "app.py").write_text("print('edited')\n")
        git(work, "add", "lib/util.py", env=env)
        first = take(work, env)
        second = take(work, env)
        assert second.digest == first.digest
        assert (second.head, second.branch, second.changed) == (
            first.head,
            first.branch,
            first.changed,
        )
        assert first.same_state(second)

    def test_clean_tree_digest_is_the_documented_encoding(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """A clean tree has the digest of the empty list: version, NUL, HEAD, NUL."""
        result = take(repo, env)
        head = head_of(repo, env)
        expected = hashlib.sha256(DIGEST_VERSION + b"\0" + head.encode() + b"\0").hexdigest()
        assert result.head == head
        assert result.changed == []
        assert result.digest == "sha256:" + expected

    def test_untracked_file_digest_is_the_documented_encoding(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """One untracked file adds (path, `?`, `file:-:<sha256 of its bytes>`), length-prefixed."""
        content = b"some bytes\x00\xff\n"
        (repo / "notes.txt").write_bytes(content)
        head = head_of(repo, env)
        state = b"file:-:" + hashlib.sha256(content).hexdigest().encode()
        expected = hashlib.sha256(
            DIGEST_VERSION + b"\0" + head.encode() + b"\0" + framed(b"notes.txt", b"?", state)
        ).hexdigest()
        assert take(repo, env).digest == "sha256:" + expected

    def test_touch_only_keeps_the_digest_and_leaves_the_index_alone(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """A new mtime on every file (same bytes) keeps the digest; git's index is not refreshed.

        The touch makes every index entry stale, so a plain `git status` afterwards does rewrite
        `.git/index`: that proves the capture had a reason to write it and did not.
        """
        (work / "app.py").write_text("print('dirty')\n")
        before = take(work, env)
        index = work / ".git" / "index"
        index_bytes = index.read_bytes()
        index_mtime = index.stat().st_mtime_ns
        assert touch_all(work, int(time.time()) + 3600) >= 6
        after = take(work, env)
        assert after.digest == before.digest
        assert after.changed == before.changed
        assert index.read_bytes() == index_bytes
        assert index.stat().st_mtime_ns == index_mtime
        git(work, "status", "--porcelain", env=env)
        assert index.read_bytes() != index_bytes, "the touch did not make the index stale"

    def test_same_size_edit_with_restored_mtime_is_still_seen(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """An edit that keeps the size and puts the old mtime back still moves the digest."""
        target = repo / "app.py"
        clean = take(repo, env)
        info = target.stat()
        target.write_text("print('HELLO')\n")
        assert target.stat().st_size == info.st_size
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        edited = take(repo, env)
        assert edited.digest != clean.digest
        assert edited.changed == ["app.py"]

    @pytest.mark.parametrize(
        ("relative", "content"),
        [
            ("debug.log", b"a different ignored log\n"),
            ("build/out.o", b"\x7fELF rebuilt"),
            ("build/deeper/new/obj.o", b"new object"),
            ("fresh.log", b"a new ignored file\n"),
        ],
    )
    def test_ignored_files_do_not_count(
        self, work: Path, env: dict[str, str], relative: str, content: bytes
    ) -> None:
        """Editing or creating a git-ignored file, or one under an ignored dir, changes nothing."""
        before = take(work, env)
        target = work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        after = take(work, env)
        assert after.digest == before.digest
        assert after.changed == before.changed == ["notes.txt"]

    def test_empty_directory_does_not_count(self, work: Path, env: dict[str, str]) -> None:
        """Git tracks no empty directories, so creating one changes nothing."""
        before = take(work, env)
        (work / "empty" / "nested").mkdir(parents=True)
        assert take(work, env).digest == before.digest

    def test_excluded_store_does_not_count(self, work: Path, env: dict[str, str]) -> None:
        """The store's own files under `exclude` (not git-ignored) are left out; others count."""
        store = work / ".cortex" / "sessions"
        before = take(work, env, exclude=store)
        case = store / "task_01M8QJ6ZGK2P9Y1N9GCHEKDY5A"
        case.mkdir(parents=True)
        (case / "case.json").write_text('{"revision": 1}\n')
        (store / ".store.lock").write_bytes(b"")
        excluded = take(work, env, exclude=store)
        assert excluded.digest == before.digest
        assert excluded.changed == ["notes.txt"]
        counted = take(work, env)
        assert counted.digest != before.digest
        assert f".cortex/sessions/{case.name}/case.json" in counted.changed
        (case / "case.json").write_text('{"revision": 2}\n')
        assert take(work, env, exclude=store).digest == before.digest
        # Anything else under the store's directory is not the store's, and counts.
        (store / "module.py").write_text("print('not a case')\n")
        foreign = take(work, env, exclude=store)
        assert foreign.digest != before.digest
        assert ".cortex/sessions/module.py" in foreign.changed

    def test_exclusion_is_a_directory_not_a_name_prefix(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """A sibling whose name merely starts like the store (`sessions-x`) still counts."""
        store = work / ".cortex" / "sessions"
        store.mkdir(parents=True)
        before = take(work, env, exclude=store)
        sibling = work / ".cortex" / "sessions-x" / "file.txt"
        sibling.parent.mkdir()
        sibling.write_text("not the store\n")
        after = take(work, env, exclude=store)
        assert after.digest != before.digest
        assert ".cortex/sessions-x/file.txt" in after.changed

    @pytest.mark.parametrize("where", ["outside", "root"])
    def test_exclude_outside_or_at_root_excludes_nothing(
        self, work: Path, env: dict[str, str], tmp_path: Path, where: str
    ) -> None:
        """An `exclude` outside the tree, or the root itself, leaves every path in."""
        exclude = tmp_path / "elsewhere" if where == "outside" else work
        plain = take(work, env)
        assert take(work, env, exclude=exclude).digest == plain.digest
        assert take(work, env, exclude=exclude).changed == ["notes.txt"]

    def test_exclude_through_a_symlinked_path(
        self, work: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """The store is left out however its path is spelled (here: through a symlink)."""
        store = work / ".cortex" / "sessions"
        store.mkdir(parents=True)
        before = take(work, env, exclude=store)
        (store / "task_01M8QJ6ZGK2P9Y1N9GCHEKDY5A").mkdir()
        (store / "task_01M8QJ6ZGK2P9Y1N9GCHEKDY5A" / "case.json").write_text("{}\n")
        alias = tmp_path / "alias"
        alias.symlink_to(work)
        after = take(work, env, exclude=alias / ".cortex" / "sessions")
        assert after.changed == ["notes.txt"]
        assert after.digest == before.digest


# -- 2. a different state, a different digest ------------------------------------------------


def _write(relative: str, content: bytes) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
        target = repo / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)

    return action


def _git(*args: str) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:
        git(repo, *args, env=env)

    return action


def _chmod_x(relative: str) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
        target = repo / relative
        target.chmod(target.stat().st_mode | 0o111)

    return action


def _unlink(relative: str) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
        (repo / relative).unlink()

    return action


def _append(relative: str, extra: bytes) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
        with (repo / relative).open("ab") as handle:
            handle.write(extra)

    return action


def _symlink(relative: str, target: str) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
        link = repo / relative
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)

    return action


def _both(first: Action, second: Action) -> Action:
    def action(repo: Path, env: dict[str, str]) -> None:
        first(repo, env)
        second(repo, env)

    return action


def _nothing(repo: Path, env: dict[str, str]) -> None:
    """No preparation."""


@dataclass(frozen=True)
class Change:
    """One change to the `work` repository: prepared, captured, changed, captured again."""

    name: str
    change: Action
    path: str
    prepare: Action = _nothing


CHANGES = [
    Change("edit tracked", _write("app.py", b"print('edited')\n"), "app.py"),
    Change(
        "edit tracked in subdir", _write("lib/util.py", b"def util(): return 2\n"), "lib/util.py"
    ),
    Change("edit untracked", _write("notes.txt", b"edited notes\n"), "notes.txt"),
    Change("new untracked", _write("new.txt", b"new\n"), "new.txt"),
    Change("new untracked, new dirs", _write("a/b/c/new.txt", b"new\n"), "a/b/c/new.txt"),
    Change("new empty untracked", _write("empty.txt", b""), "empty.txt"),
    Change("delete tracked", _unlink("lib/util.py"), "lib/util.py"),
    Change("git rm tracked", _git("rm", "-q", "lib/util.py"), "lib/util.py"),
    Change("git rm --cached", _git("rm", "-q", "--cached", "app.py"), "app.py"),
    Change("chmod +x tracked", _chmod_x("app.py"), "app.py"),
    Change(
        "chmod +x modified",
        _chmod_x("app.py"),
        "app.py",
        prepare=_write("app.py", b"print('edited')\n"),
    ),
    Change("chmod +x untracked", _chmod_x("notes.txt"), "notes.txt"),
    Change(
        "stage modified",
        _git("add", "app.py"),
        "app.py",
        prepare=_write("app.py", b"print('edited')\n"),
    ),
    Change("stage untracked", _git("add", "notes.txt"), "notes.txt"),
    Change("intent to add", _git("add", "-N", "notes.txt"), "notes.txt"),
    Change(
        "stage mode only",
        _git("update-index", "--chmod=+x", "app.py"),
        "app.py",
    ),
    Change(
        "unstage",
        _git("reset", "-q", "--", "app.py"),
        "app.py",
        prepare=_both(_write("app.py", b"print('staged')\n"), _git("add", "app.py")),
    ),
    Change("binary append 2 bytes", _append("data.bin", b"\x00\xff"), "data.bin"),
    Change("binary append to untracked", _append("notes.txt", b"\x00\x01"), "notes.txt"),
    Change("file replaced by symlink", _symlink("app.py", "lib/util.py"), "app.py"),
    Change("new untracked symlink", _symlink("link", "app.py"), "link"),
    Change(
        "untracked symlink retargeted",
        _symlink("link", "lib/util.py"),
        "link",
        prepare=_symlink("link", "app.py"),
    ),
    Change(
        "dangling symlink retargeted",
        _symlink("link", "nowhere-else"),
        "link",
        prepare=_symlink("link", "nowhere"),
    ),
]


class TestDifferentDigest:
    """Every change to what a verifier would run gives a different digest and names the path."""

    @pytest.mark.parametrize("change", CHANGES, ids=[c.name for c in CHANGES])
    def test_change_moves_the_digest(self, work: Path, env: dict[str, str], change: Change) -> None:
        """The change gives a new digest, on the same HEAD, with its path in `.changed`."""
        change.prepare(work, env)
        before = take(work, env)
        change.change(work, env)
        after = take(work, env)
        assert after.head == before.head
        assert after.digest != before.digest
        assert change.path in after.changed
        assert not before.same_state(after)
        assert after.changed == sorted(after.changed)

    def test_every_change_gives_its_own_digest(self, tmp_path: Path, env: dict[str, str]) -> None:
        """Across all changes above (on one shared HEAD), no two resulting states collide."""
        pinned = {
            **env,
            "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
        }
        digests: dict[str, str] = {}
        heads: set[str] = set()
        for number, change in enumerate(CHANGES):
            repo = make_work(tmp_path / f"w{number}", pinned)
            change.prepare(repo, pinned)
            change.change(repo, pinned)
            result = take(repo, pinned)
            assert result.head is not None
            assert result.digest is not None
            heads.add(result.head)
            digests[change.name] = result.digest
        assert len(heads) == 1, "the pinned dates should give every repository the same HEAD"
        assert len(set(digests.values())) == len(CHANGES), digests

    def test_second_edit_of_a_modified_file_moves_the_digest(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """git's record for a modified file is the same after any edit; our read of it is not."""
        (work / "app.py").write_text("print('one')\n")
        one = take(work, env)
        (work / "app.py").write_text("print('two')\n")
        two = take(work, env)
        assert two.digest != one.digest
        assert two.changed == one.changed

    def test_editing_back_to_head_restores_the_clean_digest(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """The digest is a function of the state: undoing an edit gives the original digest."""
        original = (work / "app.py").read_bytes()
        clean = take(work, env)
        (work / "app.py").write_text("print('edited')\n")
        assert take(work, env).digest != clean.digest
        (work / "app.py").write_bytes(original)
        assert take(work, env).digest == clean.digest

    def test_merge_conflict_is_bound_and_resolution_moves_it(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """Unmerged (`u`) records parse; the conflicted path is listed; resolving it counts."""
        git(repo, "checkout", "-q", "-b", "other", env=env)
        (repo / "app.py").write_text("print('other')\n")
        git(repo, "commit", "-q", "-am", "other", env=env)
        git(repo, "checkout", "-q", "main", env=env)
        (repo / "app.py").write_text("print('main')\n")
        git(repo, "commit", "-q", "-am", "main", env=env)
        proc = subprocess.run(
            ["git", "merge", "-q", "other"], cwd=repo, env=env, capture_output=True, check=False
        )
        assert proc.returncode != 0, "the merge should conflict"
        conflicted = take(repo, env)
        assert conflicted.changed == ["app.py"]
        (repo / "app.py").write_text("print('resolved')\n")
        edited = take(repo, env)
        assert edited.digest != conflicted.digest
        git(repo, "add", "app.py", env=env)
        staged = take(repo, env)
        assert staged.digest not in {conflicted.digest, edited.digest}

    def test_staged_rename_is_two_paths_even_with_rename_config(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """`git mv` shows as a deletion and an addition, whatever `status.renames` says."""
        git(work, "config", "status.renames", "copies", env=env)
        git(work, "config", "diff.renames", "copies", env=env)
        before = take(work, env)
        git(work, "mv", "lib/util.py", "lib/moved.py", env=env)
        after = take(work, env)
        assert after.digest != before.digest
        assert {"lib/util.py", "lib/moved.py"} <= set(after.changed)

    def test_tracked_file_replaced_by_a_directory(self, work: Path, env: dict[str, str]) -> None:
        """A tracked file turned into a directory of the same name counts, with its contents."""
        before = take(work, env)
        (work / "app.py").unlink()
        (work / "app.py").mkdir()
        (work / "app.py" / "inner.txt").write_text("inside\n")
        after = take(work, env)
        assert after.digest != before.digest
        assert {"app.py", "app.py/inner.txt"} <= set(after.changed)


ODD_NAMES: list[tuple[bytes, str]] = [
    (b"with space.txt", "with space.txt"),
    (b"two  spaces and a trailing one .txt", "two  spaces and a trailing one .txt"),
    (b"dir with space/inner file.txt", "dir with space/inner file.txt"),
    (b"line\nbreak.txt", "line\nbreak.txt"),
    (b"tab\there.txt", "tab\there.txt"),
    (b"-leading-dash.txt", "-leading-dash.txt"),
    (b"--force", "--force"),
    (b'quote"and\\backslash.txt', 'quote"and\\backslash.txt'),
    (b"caf\xe9-latin1.txt", "caf\\xe9-latin1.txt"),
    (b"\xff\xfe-not-utf8", "\\xff\\xfe-not-utf8"),
    ("naïve-日本語-😀.txt".encode(), "naïve-日本語-😀.txt"),
    (b"1 .M N... looks like a record", "1 .M N... looks like a record"),
]


def _odd_id(name: tuple[bytes, str]) -> str:
    return name[0].decode("ascii", "backslashreplace").replace("\n", "\\n").replace("\t", "\\t")


class TestOddNames:
    """Raw path bytes: git's `-z` output must map to the very file cortex then reads."""

    @pytest.mark.parametrize("name", ODD_NAMES, ids=[_odd_id(n) for n in ODD_NAMES])
    def test_untracked_odd_name(
        self, repo: Path, env: dict[str, str], name: tuple[bytes, str]
    ) -> None:
        """Created: new digest, path listed; edited: new digest again (only our read sees it)."""
        raw, shown = name
        path = os.path.join(os.fsencode(repo), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        clean = take(repo, env)
        with open(path, "wb") as handle:
            handle.write(b"one\n")
        created = take(repo, env)
        assert created.digest != clean.digest
        assert created.changed == [shown]
        with open(path, "wb") as handle:
            handle.write(b"two\n")
        edited = take(repo, env)
        assert edited.digest not in {clean.digest, created.digest}
        assert edited.changed == [shown]

    @pytest.mark.parametrize("name", ODD_NAMES, ids=[_odd_id(n) for n in ODD_NAMES])
    def test_tracked_odd_name(
        self, repo: Path, env: dict[str, str], name: tuple[bytes, str]
    ) -> None:
        """Committed, then edited twice and deleted: each state has its own digest."""
        raw, shown = name
        path = os.path.join(os.fsencode(repo), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(b"committed\n")
        git(repo, "add", "--", os.fsdecode(raw), env=env)
        git(repo, "commit", "-q", "-m", "odd", env=env)
        clean = take(repo, env)
        assert clean.changed == []
        digests = {clean.digest}
        for content in (b"one\n", b"two\n"):
            with open(path, "wb") as handle:
                handle.write(content)
            edited = take(repo, env)
            assert edited.changed == [shown]
            digests.add(edited.digest)
        os.unlink(path)
        deleted = take(repo, env)
        assert deleted.changed == [shown]
        digests.add(deleted.digest)
        assert len(digests) == 4


# -- 3. configuration cannot change the digest or run commands --------------------------------


def _dirty(repo: Path, env: dict[str, str]) -> None:
    """Modified, staged, staged-then-modified, deleted and untracked paths."""
    (repo / "app.py").write_text("print('modified')\n")
    (repo / "lib" / "util.py").write_text("def util(): return 3\n")
    git(repo, "add", "lib/util.py", env=env)
    (repo / "lib" / "util.py").write_text("def util(): return 4\n")
    (repo / "data.bin").unlink()
    (repo / "caf\u00e9 dir").mkdir()
    (repo / "caf\u00e9 dir" / "new file.txt").write_text("new\n")


CONFIGS: list[tuple[str, str]] = [
    ("color.ui", "always"),
    ("color.status", "always"),
    ("status.showUntrackedFiles", "no"),
    ("status.relativePaths", "true"),
    ("status.short", "true"),
    ("status.branch", "false"),
    ("status.aheadBehind", "true"),
    ("status.renames", "copies"),
    ("core.quotePath", "true"),
    ("diff.noprefix", "true"),
    ("diff.renames", "copies"),
    ("diff.ignoreSubmodules", "all"),
    ("diff.mnemonicPrefix", "true"),
    ("core.untrackedCache", "true"),
]


class TestConfiguration:
    """The user's and the repository's git configuration cannot change what is bound."""

    @pytest.mark.parametrize("scope", ["--global", "--local"])
    @pytest.mark.parametrize(("key", "value"), CONFIGS, ids=[k for k, _ in CONFIGS])
    def test_display_config_keeps_the_digest(
        self, work: Path, env: dict[str, str], scope: str, key: str, value: str
    ) -> None:
        """Set at user or repository level, a display/diff setting changes nothing we bind."""
        _dirty(work, env)
        before = take(work, env)
        git(work, "config", scope, key, value, env=env)
        assert git(work, "config", key, env=env) == value
        after = take(work, env)
        assert after.digest == before.digest
        assert after.changed == before.changed
        assert "caf\u00e9 dir/new file.txt" in after.changed

    def test_untracked_files_setting_would_have_hidden_files(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """The settings above are real: plain `git status` obeys them, the capture does not."""
        _dirty(work, env)
        git(work, "config", "status.showUntrackedFiles", "no", env=env)
        git(work, "config", "core.quotePath", "true", env=env)
        plain = git(work, "status", "--porcelain", env=env)
        assert "notes.txt" not in plain
        assert "new file" not in plain
        result = take(work, env)
        assert "notes.txt" in result.changed
        assert "caf\u00e9 dir/new file.txt" in result.changed

    def test_diff_external_never_runs(
        self, work: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """`diff.external` (a command) is neither run nor able to change the digest."""
        marker = tmp_path / "diff-external-ran"
        script = write_script(tmp_path / "ext.sh", f"touch '{marker}'\necho changed\n")
        _dirty(work, env)
        before = take(work, env)
        git(work, "config", "diff.external", str(script), env=env)
        after = take(work, env)
        assert after.digest == before.digest
        assert not marker.exists()
        git(work, "diff", env=env)
        assert marker.exists(), "the script should run for a plain `git diff`"

    @pytest.mark.parametrize("stale", [False, True], ids=["fresh-index", "stale-index"])
    def test_repo_fsmonitor_hook_never_runs(
        self, work: Path, env: dict[str, str], tmp_path: Path, stale: bool
    ) -> None:
        """A repository's `core.fsmonitor` hook is not run by a capture (but is by `git status`)."""
        marker = tmp_path / "fsmonitor-ran"
        script = write_script(tmp_path / "fsmonitor.sh", f"touch '{marker}'\nexit 1\n")
        _dirty(work, env)
        before = take(work, env)
        git(work, "config", "core.fsmonitor", str(script), env=env)
        if stale:
            touch_all(work, int(time.time()) + 3600)
        after = take(work, env)
        assert not marker.exists(), "the capture ran the repository's fsmonitor hook"
        assert after.digest == before.digest
        git(work, "status", "--porcelain", env=env)
        assert marker.exists(), "the hook should run for a plain `git status`"


# -- 4. HEAD binding -------------------------------------------------------------------------


class TestHead:
    """HEAD is bound separately from the digest, and the branch is reported."""

    def test_new_commit_changes_head(self, repo: Path, env: dict[str, str]) -> None:
        """A commit moves `.head` to the new commit id (and the digest with it)."""
        first = take(repo, env)
        assert first.head == head_of(repo, env)
        git(repo, "commit", "-q", "--allow-empty", "-m", "next", env=env)
        second = take(repo, env)
        assert second.head == head_of(repo, env)
        assert second.head != first.head
        assert second.digest != first.digest
        assert not first.same_state(second)

    def test_same_edits_on_two_commits_differ(self, repo: Path, env: dict[str, str]) -> None:
        """Identical work-tree states (same records, same bytes) on two HEADs differ."""
        (repo / "scratch.txt").write_text("same bytes\n")
        on_first = take(repo, env)
        git(repo, "commit", "-q", "--allow-empty", "-m", "second", env=env)
        on_second = take(repo, env)
        assert on_first.changed == on_second.changed == ["scratch.txt"]
        assert on_first.head != on_second.head
        assert on_first.digest != on_second.digest
        assert (on_first.head, on_first.digest) != (on_second.head, on_second.digest)

    def test_branch_is_reported(self, repo: Path, env: dict[str, str]) -> None:
        """`.branch` is the checked-out branch's short name, slashes included."""
        assert take(repo, env).branch == "main"
        git(repo, "checkout", "-q", "-b", "feature/login-fix", env=env)
        result = take(repo, env)
        assert result.branch == "feature/login-fix"
        assert result.head == head_of(repo, env)

    def test_detached_head_is_bound_without_branch(self, repo: Path, env: dict[str, str]) -> None:
        """A detached HEAD is bound to its commit; there is no branch."""
        on_branch = take(repo, env)
        git(repo, "checkout", "-q", "--detach", env=env)
        detached = take(repo, env)
        assert detached.branch is None
        assert detached.head == on_branch.head
        assert detached.digest == on_branch.digest
        (repo / "app.py").write_text("print('detached edit')\n")
        edited = take(repo, env)
        assert edited.digest != detached.digest
        assert edited.changed == ["app.py"]

    def test_linked_worktree_is_captured_on_its_own(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A linked worktree binds its own HEAD and branch, independently of the main one."""
        linked = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", "-b", "side", str(linked), env=env)
        git(linked, "commit", "-q", "--allow-empty", "-m", "side", env=env)
        (linked / "app.py").write_text("print('linked')\n")
        main_capture = take(repo, env)
        linked_capture = take(linked, env)
        assert linked_capture.branch == "side"
        assert linked_capture.head == head_of(linked, env)
        assert linked_capture.head != main_capture.head
        assert linked_capture.changed == ["app.py"]
        assert main_capture.changed == []


# -- 5. no binding ---------------------------------------------------------------------------


class TestUnbound:
    """When nothing can be bound, the capture says why, and never hangs."""

    def test_plain_directory(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A directory outside git gives no head, no digest and a reason naming git."""
        plain = tmp_path / "plain"
        plain.mkdir()
        (plain / "file.txt").write_text("x\n")
        result = capture(str(plain), {**env, "GIT_CEILING_DIRECTORIES": str(tmp_path)})
        assert not result.bound
        assert (result.head, result.digest, result.changed) == (None, None, [])
        assert result.reason is not None
        assert "not a git repository" in result.reason

    def test_repository_without_commit(self, tmp_path: Path, env: dict[str, str]) -> None:
        """An unborn HEAD cannot be bound, even with files present; the branch is known."""
        empty = tmp_path / "empty"
        empty.mkdir()
        git(empty, "-c", "init.defaultBranch=main", "init", "-q", env=env)
        (empty / "file.txt").write_text("x\n")
        result = capture(str(empty), env)
        assert not result.bound
        assert result.head is None
        assert result.digest is None
        assert result.reason is not None
        assert "no commit" in result.reason
        assert result.branch == "main"

    def test_git_not_installed(self, repo: Path, env: dict[str, str], tmp_path: Path) -> None:
        """Without git on PATH the reason says so (and nothing is bound)."""
        result = capture(str(repo), no_git_env(env, tmp_path))
        assert not result.bound
        assert result.digest is None
        assert result.reason is not None
        assert "git is not installed" in result.reason

    def test_git_failure_is_a_reason(self, repo: Path, env: dict[str, str]) -> None:
        """A broken repository (corrupt index) is a reason, not an exception."""
        (repo / ".git" / "index").write_bytes(b"DIRC garbage")
        result = capture(str(repo), env)
        assert not result.bound
        assert result.reason is not None
        assert result.reason.startswith("git status failed")

    def test_missing_root_is_not_reported_as_missing_git(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """A root that does not exist is unbound with a reason that does not blame git."""
        result = capture(str(tmp_path / "gone"), env)
        assert not result.bound
        assert result.reason is not None
        assert "git is not installed" not in result.reason

    @pytest.mark.timeout(30)
    def test_untracked_fifo_does_not_hang(self, work: Path, env: dict[str, str]) -> None:
        """An untracked FIFO (nobody writing to it) neither hangs the capture nor counts.

        git lists no special files as untracked, so the state, and the digest, are unchanged.
        """
        before = take(work, env)
        os.mkfifo(work / "pipe")
        after = take(work, env)
        assert after.changed == before.changed
        assert after.digest == before.digest

    @pytest.mark.timeout(30)
    def test_tracked_file_replaced_by_fifo(self, work: Path, env: dict[str, str]) -> None:
        """A tracked file swapped for a FIFO is listed and changes the digest, without hanging."""
        before = take(work, env)
        (work / "app.py").unlink()
        os.mkfifo(work / "app.py")
        after = take(work, env)
        assert "app.py" in after.changed
        assert after.digest != before.digest


# -- 6. .git is never written ----------------------------------------------------------------


class TestNeverWritesGit:
    """Captures read; they never write `.git`, not even opportunistically."""

    def test_hundred_captures_leave_git_byte_identical(
        self, work: Path, env: dict[str, str]
    ) -> None:
        """100 captures of a dirty tree with a stale index leave every `.git` path identical."""
        _dirty(work, env)
        git(work, "add", "notes.txt", env=env)
        (work / "untracked.txt").write_text("untracked\n")
        touch_all(work, int(time.time()) + 3600)
        before = snapshot(work / ".git")
        tree_before = snapshot(work)
        assert "index" in before
        assert any(key.startswith("objects") for key in before)
        digests = {take(work, env).digest for _ in range(100)}
        assert len(digests) == 1
        assert snapshot(work / ".git") == before
        assert snapshot(work) == tree_before

    @pytest.mark.process
    def test_captures_while_another_process_commits(
        self, work: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """Captures racing a real `git commit` loop: no error, no lock left, every head real."""
        _dirty(work, env)
        stop = tmp_path / "stop"
        loop = (
            "import os, subprocess, sys, time\n"
            "stop, deadline, count = sys.argv[1], time.monotonic() + 15, 0\n"
            "while not os.path.exists(stop) and time.monotonic() < deadline:\n"
            "    subprocess.run(['git', 'commit', '--allow-empty', '-q', '-m', 'x'], check=True)\n"
            "    count += 1\n"
            "print(count)\n"
        )
        committer = subprocess.Popen(
            [sys.executable, "-c", loop, str(stop)],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            first = head_of(work, env)
            deadline = time.monotonic() + 10
            while head_of(work, env) == first and time.monotonic() < deadline:
                time.sleep(0.01)
            results = [capture(str(work), env) for _ in range(100)]
        finally:
            stop.touch()
            out, err = committer.communicate(timeout=30)
        assert committer.returncode == 0, err
        assert int(out) > 0
        unbound = [r.reason for r in results if not r.bound]
        assert unbound == []
        assert not (work / ".git" / "index.lock").exists()
        assert not list((work / ".git").rglob("*.lock"))
        git(work, "fsck", "--no-progress", "--strict", env=env)
        heads = {r.head for r in results if r.head is not None}
        for head in heads:
            git(work, "cat-file", "-e", f"{head}^{{commit}}", env=env)
        assert len(heads) >= 2, "the captures never saw the committing loop move HEAD"
        changed = {tuple(r.changed) for r in results}
        assert len(changed) == 1, "the work tree did not change, so neither may the paths"


# -- 7. submodules and nested repositories ---------------------------------------------------


@pytest.fixture
def with_submodule(tmp_path: Path, env: dict[str, str], repo: Path) -> Path:
    """`repo` with a committed submodule at `sub` (cloned from a local repository)."""
    upstream = make_repo(tmp_path / "upstream", env)
    add_submodule(repo, upstream, "sub", env)
    return repo


class TestSubmodule:
    """A submodule contributes its state flags (and, per the design, its commit)."""

    def test_modified_submodule_content_moves_the_digest(
        self, with_submodule: Path, env: dict[str, str]
    ) -> None:
        """An edit inside the submodule, and an untracked file there, each move the digest."""
        clean = take(with_submodule, env)
        assert clean.changed == []
        (with_submodule / "sub" / "app.py").write_text("print('changed in sub')\n")
        modified = take(with_submodule, env)
        assert modified.digest != clean.digest
        assert modified.changed == ["sub"]
        (with_submodule / "sub" / "extra.txt").write_text("untracked in sub\n")
        untracked_too = take(with_submodule, env)
        assert untracked_too.digest not in {clean.digest, modified.digest}

    def test_new_submodule_commit_moves_the_digest(
        self, with_submodule: Path, env: dict[str, str]
    ) -> None:
        """Moving the submodule off its recorded commit moves the digest."""
        clean = take(with_submodule, env)
        git(with_submodule / "sub", "commit", "-q", "--allow-empty", "-m", "moved", env=env)
        moved = take(with_submodule, env)
        assert moved.digest != clean.digest
        assert moved.changed == ["sub"]

    def test_two_different_submodule_commits_differ(
        self, with_submodule: Path, env: dict[str, str]
    ) -> None:
        """The submodule checked out at commit X and at commit Y (both unrecorded) differ."""
        sub = with_submodule / "sub"
        git(sub, "commit", "-q", "--allow-empty", "-m", "x", env=env)
        at_x = take(with_submodule, env)
        git(sub, "commit", "-q", "--allow-empty", "-m", "y", env=env)
        at_y = take(with_submodule, env)
        assert head_of(sub, env) != git(sub, "rev-parse", "HEAD~1", env=env)
        assert at_y.digest != at_x.digest

    def test_submodule_file_bytes_count(self, with_submodule: Path, env: dict[str, str]) -> None:
        """A second edit inside an already dirty submodule is seen: its files are captured too."""
        target = with_submodule / "sub" / "app.py"
        target.write_text("print('one')\n")
        one = take(with_submodule, env)
        target.write_text("print('two')\n")
        assert take(with_submodule, env).digest != one.digest

    def test_untracked_nested_repository_edits_move_the_digest(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """Editing a file inside an untracked nested repository changes the digest."""
        nested = make_repo(repo / "vendored", env)
        before = take(repo, env)
        assert before.changed == ["vendored/"]
        (nested / "app.py").write_text("print('edited inside the nested repo')\n")
        assert take(repo, env).digest != before.digest


# -- 8. committed changes --------------------------------------------------------------------


class TestCommittedChanges:
    """`committed_changes` lists the paths that differ between two commits."""

    def test_lists_added_modified_deleted(self, work: Path, env: dict[str, str]) -> None:
        """Additions, edits, deletions, mode changes and odd names between two commits."""
        base = head_of(work, env)
        (work / "app.py").write_text("print('changed')\n")
        (work / "lib" / "util.py").unlink()
        (work / "data.bin").chmod(0o755)
        (work / "new dir").mkdir()
        (work / "new dir" / "ünïcode file.txt").write_text("new\n")
        odd = os.path.join(os.fsencode(work), b"caf\xe9.txt")
        with open(odd, "wb") as handle:
            handle.write(b"latin-1 name\n")
        git(work, "add", "-A", env=env)
        git(work, "commit", "-q", "-m", "changes", env=env)
        head = head_of(work, env)
        expected = sorted(
            [
                "app.py",
                "caf\\xe9.txt",
                "data.bin",
                "lib/util.py",
                "new dir/ünïcode file.txt",
                "notes.txt",
            ]
        )
        assert sorted(committed_changes(str(work), env, base, head) or []) == expected
        assert sorted(committed_changes(str(work), env, head, base) or []) == expected

    def test_rename_is_two_paths(self, work: Path, env: dict[str, str]) -> None:
        """A committed rename lists both the old and the new path, even with rename config."""
        git(work, "config", "diff.renames", "copies", env=env)
        base = head_of(work, env)
        git(work, "mv", "lib/util.py", "lib/moved.py", env=env)
        git(work, "commit", "-q", "-m", "rename", env=env)
        found = committed_changes(str(work), env, base, head_of(work, env))
        assert sorted(found or []) == ["lib/moved.py", "lib/util.py"]

    def test_same_commit_is_empty(self, repo: Path, env: dict[str, str]) -> None:
        """The same commit (same id, or two names of it) has no changes."""
        head = head_of(repo, env)
        assert committed_changes(str(repo), env, head, head) == []
        assert committed_changes(str(repo), env, "HEAD", head) == []

    def test_only_commits_count_not_the_work_tree(self, repo: Path, env: dict[str, str]) -> None:
        """Uncommitted edits are the capture's business, not committed_changes'."""
        base = head_of(repo, env)
        (repo / "b.txt").write_text("b\n")
        git(repo, "add", "b.txt", env=env)
        git(repo, "commit", "-q", "-m", "b", env=env)
        (repo / "app.py").write_text("print('uncommitted')\n")
        (repo / "c.txt").write_text("untracked\n")
        assert committed_changes(str(repo), env, base, head_of(repo, env)) == ["b.txt"]

    @pytest.mark.parametrize("bad", ["0" * 40, "no-such-branch", "HEAD~5", "-x"])
    def test_bad_ref_is_none(self, repo: Path, env: dict[str, str], bad: str) -> None:
        """A ref git cannot resolve gives None (git cannot say), in either position."""
        head = head_of(repo, env)
        assert committed_changes(str(repo), env, bad, head) is None
        assert committed_changes(str(repo), env, head, bad) is None

    def test_user_diff_config_does_not_change_the_list(
        self, work: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """External diff, quoting, prefixes, relative paths, order and colour change nothing."""
        base = head_of(work, env)
        (work / "lib" / "util.py").write_text("changed\n")
        (work / "naïve name.txt").write_text("n\n")
        git(work, "add", "-A", env=env)
        git(work, "commit", "-q", "-m", "c", env=env)
        head = head_of(work, env)
        plain = committed_changes(str(work), env, base, head)
        assert sorted(plain or []) == ["lib/util.py", "naïve name.txt", "notes.txt"]
        marker = tmp_path / "external-ran"
        script = write_script(tmp_path / "ext.sh", f"touch '{marker}'\n")
        order = tmp_path / "order.txt"
        order.write_text("notes.txt\n*\n")
        for key, value in [
            ("diff.external", str(script)),
            ("core.quotePath", "true"),
            ("diff.noprefix", "true"),
            ("diff.relative", "true"),
            ("color.ui", "always"),
            ("diff.orderFile", str(order)),
        ]:
            git(work, "config", "--global", key, value, env=env)
        assert sorted(committed_changes(str(work), env, base, head) or []) == sorted(plain or [])
        assert not marker.exists()

    def test_git_not_installed_is_none(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """Without git there is no answer: None, not an exception."""
        head = head_of(repo, env)
        assert committed_changes(str(repo), no_git_env(env, tmp_path), "HEAD~0", head) is None

    def test_option_like_ref_is_not_an_option(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A ref that looks like an option is refused (None) and writes nothing."""
        (repo / "b.txt").write_text("b\n")
        git(repo, "add", "b.txt", env=env)
        git(repo, "commit", "-q", "-m", "b", env=env)
        written = tmp_path / "written-by-git"
        result = committed_changes(str(repo), env, f"--output={written}", "HEAD")
        assert not written.exists()
        assert result is None


def test_capture_times_itself(repo: Path, env: dict[str, str]) -> None:
    """`.seconds` is the measured duration; a fast capture carries no stale-index warning."""
    result = take(repo, env)
    assert 0.0 < result.seconds < 1.0
    assert result.warning is None


def test_untouched_work_tree_after_capture(work: Path, env: dict[str, str]) -> None:
    """The capture reads the work tree without changing it (bytes, sizes and mtimes)."""
    _dirty(work, env)
    before = snapshot(work)
    for _ in range(5):
        take(work, env)
    assert snapshot(work) == before


@pytest.mark.slow
def test_large_stale_tree_is_bound_and_unchanged(tmp_path: Path, env: dict[str, str]) -> None:
    """Several thousand files, all touched: same digest, `.git` untouched (slower; opt-in)."""
    repo = make_repo(tmp_path / "big", env)
    for number in range(3000):
        folder = repo / f"d{number % 30}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{number}.txt").write_text(f"{number}\n" * 20)
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "big", env=env)
    (repo / "d0" / "f0.txt").write_text("edited\n")
    before = take(repo, env)
    git_before = snapshot(repo / ".git")
    touch_all(repo, int(time.time()) + 3600)
    after = take(repo, env)
    assert after.digest == before.digest
    assert after.changed == ["d0/f0.txt"]
    assert snapshot(repo / ".git") == git_before
    shutil.rmtree(repo)
