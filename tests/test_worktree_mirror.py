"""The private index mirror: same digests as git's own index, and `.git` is never written.

docs/design/verification.md §1 ("Stale index"). Every test runs real git on real repositories
and compares a capture through the mirror with one on the real index (`mirror_dir=None`).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from conftest import git

from cortex.workspace import index_mirror
from cortex.workspace.capture import Capture, capture


def snapshot(git_dir: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every file under .git: size, mtime, inode and content hash."""
    found: dict[str, tuple[int, int, int, str]] = {}
    for path in sorted(git_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path.relative_to(git_dir))] = (
                info.st_size,
                info.st_mtime_ns,
                info.st_ino,
                digest,
            )
    return found


def both(repo: Path, env: dict[str, str], mirror: Path) -> tuple[Capture, Capture]:
    """A capture on the real index and one through the mirror."""
    return capture(str(repo), env), capture(str(repo), env, mirror_dir=str(mirror))


def dirty(repo: Path, env: dict[str, str]) -> None:
    """Modified, staged, deleted and untracked files."""
    for index in range(20):
        (repo / f"file{index}.txt").write_text(f"content {index}\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "files", env=env)
    (repo / "file1.txt").write_text("modified\n")
    (repo / "file2.txt").write_text("staged\n")
    git(repo, "add", "file2.txt", env=env)
    (repo / "file3.txt").unlink()
    (repo / "new.txt").write_text("untracked\n")


def test_mirror_digest_equals_the_real_index_digest(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Through the mirror, every dirty state digests exactly as through git's own index."""
    mirror = tmp_path / "mirror"
    clean_real, clean_mirror = both(repo, env, mirror)
    assert clean_real.digest == clean_mirror.digest
    dirty(repo, env)
    real, through = both(repo, env, mirror)
    assert real.bound
    assert through.digest == real.digest
    assert through.digest != clean_real.digest
    assert through.changed == real.changed
    assert any(name.startswith("index-") for name in os.listdir(mirror))


def test_git_dir_is_never_written_through_the_mirror(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """30 captures, with every file touched in between, leave every byte of .git as it was."""
    dirty(repo, env)
    before = snapshot(repo / ".git")
    mirror = tmp_path / "mirror"
    digests = set()
    for round_ in range(30):
        if round_ % 10 == 0:
            now = time.time() + round_
            for path in repo.glob("file*.txt"):
                os.utime(path, (now, now))
        digests.add(capture(str(repo), env, mirror_dir=str(mirror)).digest)
    assert snapshot(repo / ".git") == before
    assert len(digests) == 1


def test_a_stale_index_is_refreshed_in_the_mirror_only(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """After a mass touch a capture saves refreshed stat data to the mirror, not to .git.

    `git diff-files` (which never refreshes) lists the entries whose stat data no longer match
    the work tree: every touched file for the real index, only the modified ones for the mirror.
    """
    dirty(repo, env)
    mirror = tmp_path / "mirror"
    capture(str(repo), env, mirror_dir=str(mirror))
    earlier = time.time() - 1000
    for path in repo.glob("file*.txt"):
        os.utime(path, (earlier, earlier))
    real_index = (repo / ".git" / "index").read_bytes()
    capture(str(repo), env, mirror_dir=str(mirror))
    (name,) = [n for n in os.listdir(mirror) if n.startswith("index-") and "lock" not in n]
    stale_real = git(repo, "diff-files", "--name-only", env=env).split()
    stale_mirror = git(
        repo, "diff-files", "--name-only", env=dict(env, GIT_INDEX_FILE=str(mirror / name))
    ).split()
    assert len(stale_real) >= 15  # the real index still needs the refresh it was never given
    assert sorted(stale_mirror) == ["file1.txt", "file3.txt"]  # only the real changes
    assert (repo / ".git" / "index").read_bytes() == real_index


def test_a_new_real_index_gets_a_new_mirror(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Staging changes the real index's identity, so the old mirror cannot stand in for it."""
    dirty(repo, env)
    mirror = tmp_path / "mirror"
    first = capture(str(repo), env, mirror_dir=str(mirror))
    names = set(os.listdir(mirror))
    git(repo, "add", "file1.txt", env=env)
    real, through = both(repo, env, mirror)
    assert through.digest == real.digest
    assert through.digest != first.digest
    assert set(os.listdir(mirror)) != names


def test_the_copy_keeps_the_index_mtime(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    """git's racy-entry check compares with the index file's mtime: the copy must keep it."""
    path = index_mirror.mirror(str(repo), env, str(tmp_path / "mirror"))
    assert path is not None
    real = (repo / ".git" / "index").stat()
    copy = Path(path).stat()
    assert copy.st_mtime_ns == real.st_mtime_ns
    assert Path(path).read_bytes() == (repo / ".git" / "index").read_bytes()
    assert copy.st_mode & 0o077 == 0


def test_a_racy_edit_is_seen_through_the_mirror(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """An edit of the same size right after `git add` (same timestamp) still changes the digest."""
    mirror = tmp_path / "mirror"
    for attempt in range(5):
        target = repo / f"racy{attempt}.txt"
        target.write_text("aaaa\n")
        git(repo, "add", target.name, env=env)
        target.write_text("bbbb\n")  # same size, very likely the same mtime as the index write
        real, through = both(repo, env, mirror)
        assert through.digest == real.digest
        target.write_text("aaaa\n")
        staged_only = capture(str(repo), env, mirror_dir=str(mirror))
        assert staged_only.digest != through.digest


def test_an_explicit_index_file_is_left_to_git(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """With GIT_INDEX_FILE set the user chose the index: no mirror is made."""
    dirty(repo, env)
    mirror = tmp_path / "mirror"
    chosen = dict(env, GIT_INDEX_FILE=str(repo / ".git" / "index"))
    result = capture(str(repo), chosen, mirror_dir=str(mirror))
    assert result.bound
    assert not mirror.exists() or os.listdir(mirror) == []


def test_a_linked_worktree_uses_its_own_index(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A worktree's `.git` file names its git dir; the mirror copies that index."""
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side", env=env)
    (linked / "side.txt").write_text("side\n")
    git(linked, "add", "side.txt", env=env)
    real, through = both(linked, env, tmp_path / "mirror")
    assert through.digest == real.digest
    assert "side.txt" in through.changed


def test_a_split_index_falls_back_to_the_real_index(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A split index keeps its shared part beside the real index; the capture still works.

    Reading a split index, git itself (with or without optional locks) freshens the shared
    part's mtime so that it is not expired; its bytes stay the same. That is the one change to
    `.git` a capture can cause, and only in a repository that uses a split index.
    """
    dirty(repo, env)
    git(repo, "update-index", "--split-index", env=env)
    before = snapshot(repo / ".git")
    real, through = both(repo, env, tmp_path / "mirror")
    assert through.bound
    assert through.digest == real.digest
    after = snapshot(repo / ".git")
    assert after.keys() == before.keys()
    for name, (size, mtime, inode, digest) in before.items():
        if name.startswith("sharedindex."):
            assert after[name][0::2] == (size, inode)
            assert after[name][3] == digest
        else:
            assert after[name] == (size, mtime, inode, digest), name


def test_nested_repositories_are_captured_to_a_bounded_depth(
    repo: Path, env: dict[str, str]
) -> None:
    """An unborn nested clone counts by its files; nesting past the limit is unbindable."""
    inner = repo / "vendored"
    inner.mkdir()
    git(inner, "init", "-q", env=env)
    (inner / "lib.py").write_text("one\n")
    first = capture(str(repo), env)
    (inner / "lib.py").write_text("two\n")
    second = capture(str(repo), env)
    assert first.bound
    assert second.digest != first.digest
    deep = inner
    for level in range(5):
        deep = deep / f"level{level}"
        deep.mkdir()
        git(deep, "init", "-q", env=env)
        (deep / "f.txt").write_text("x\n")
    too_deep = capture(str(repo), env)
    assert not too_deep.bound
    assert too_deep.reason is not None
    assert "nested" in too_deep.reason
