"""Attacks on `cortex adopt` (issue 28): a planted store under the state root must never make
adopt move, delete or follow anything outside the stores it adopts (docs/design/storage.md,
"Archive, remove, adopt"). Real repositories moved on disk, real symlinks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli

pytestmark = pytest.mark.process  # like tests/test_adopt.py


def orphaned_store(cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A case opened here, then the repository moved away: (the orphaned store, the new repo)."""
    cli.open("Where do sessions live", "--idempotency-key", "sessions-1")
    target = tmp_path / "elsewhere" / "renamed-repo"
    target.parent.mkdir()
    repo.rename(target)
    (store,) = Path(env["CORTEX_STATE_DIR"]).glob("sessions/*")
    return store, target


@pytest.mark.parametrize("planted", [".keys", ".archive"])
def test_a_planted_symlink_in_an_orphaned_store_moves_and_deletes_nothing_outside(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, planted: str
) -> None:
    """The store's `.keys` (or `.archive`) replaced by a link to a directory of the user's."""
    store, target = orphaned_store(cli, env, repo, tmp_path)
    outside = tmp_path / "documents"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n")
    (outside / ".gitignore").write_text("keep me too\n")
    (outside / "task_01J00000000000000000000000").mkdir()  # a case-shaped name, not a case
    (outside / "task_01J00000000000000000000000" / "notes").write_text("mine\n")
    before = sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*"))
    planted_path = store / planted
    if planted_path.exists():
        shutil.rmtree(planted_path)
    planted_path.symlink_to(outside)
    here = Cli(env, target)
    out = here("adopt")
    assert out.code == 0, out.stdout + out.stderr
    assert any(planted in w and "link" in w for w in out.data["warnings"]), out.data
    after = sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*"))
    assert after == before
    assert (outside / "precious.txt").read_text() == "keep me\n"
    assert (outside / ".gitignore").read_text() == "keep me too\n"
    assert os.path.islink(planted_path) or not os.path.lexists(planted_path)


NOBODY = 65534


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root (to own files as two users) and setpriv (to run cortex as the other)",
)
def test_another_users_store_is_not_adopted_and_says_so() -> None:
    """A state root shared with another user (a CI image, a shared CORTEX_STATE_DIR): their
    orphaned store, readable to us, is neither offered nor moved, and naming it is a clear error
    (before: internal_error, a PermissionError on its lock)."""
    import tempfile

    from conftest import base_env, make_repo

    tmp_path = Path(tempfile.mkdtemp(prefix="cortex-attack-"))  # outside pytest's 0700 root
    try:
        tmp_path.chmod(0o755)
        env = base_env(tmp_path)
        repo = make_repo(tmp_path / "repo", env)
        _another_users_store(Cli(env, repo), env, repo, tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _another_users_store(cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    theirs, target = orphaned_store(cli, env, repo, tmp_path)
    for path in [theirs, *theirs.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # theirs, and readable to everyone
    state = Path(env["CORTEX_STATE_DIR"])
    mine = [tmp_path, state, state / "sessions", target.parent, target, *target.rglob("*"),
            Path(env["HOME"])]  # fmt: skip
    for path in mine:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    before = sorted(str(p) for p in theirs.rglob("*"))
    nobody = {**env, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
              "GIT_CONFIG_VALUE_0": "*"}  # fmt: skip

    def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             sys.executable, "-m", "cortex", *args, "--json"],
            cwd=target, env=nobody, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    offered = as_nobody("adopt")
    assert offered.returncode == 0, offered.stdout + offered.stderr
    assert json.loads(offered.stdout)["data"]["stores"] == []
    named = as_nobody("adopt", theirs.name)
    assert named.returncode == 4, named.stdout + named.stderr
    assert "another user" in json.loads(named.stdout)["error"]["message"]
    assert sorted(str(p) for p in theirs.rglob("*")) == before


@pytest.mark.parametrize("name", ["..", "../../etc", "/etc", ".archive", ".keys", "sessions/.."])
def test_a_hostile_store_name_names_no_store_and_changes_nothing(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, name: str
) -> None:
    from conftest import tree_state

    _, target = orphaned_store(cli, env, repo, tmp_path)
    state = Path(env["CORTEX_STATE_DIR"])
    before = tree_state(state)
    out = Cli(env, target)("adopt", name)
    assert out.code in {3, 4}, out.stdout
    assert out.envelope["error"]["message"]
    assert tree_state(state) == before


def test_recall_drop_never_follows_a_planted_link_for_the_mirror_directory(
    cli: Cli, env: dict[str, str], tmp_path: Path
) -> None:
    """`recall drop` deletes what is derived; `<state root>/index-mirror` replaced by a link to
    a directory of the user's must not make it delete that directory's contents."""
    cli.open("anything")
    outside = tmp_path / "documents"
    (outside / "project").mkdir(parents=True)
    (outside / "project" / "thesis.txt").write_text("years of work\n")
    (outside / "notes.txt").write_text("keep\n")
    mirrors = Path(env["CORTEX_STATE_DIR"]) / "index-mirror"
    if mirrors.exists():
        shutil.rmtree(mirrors)
    mirrors.symlink_to(outside)
    dry = cli("recall", "drop", "--dry-run")
    assert dry.code == 0, dry.stdout
    out = cli("recall", "drop")
    assert out.code == 0, out.stdout
    assert (outside / "project" / "thesis.txt").read_text() == "years of work\n"
    assert (outside / "notes.txt").read_text() == "keep\n"
    assert all(str(outside) not in json.dumps(entry) for entry in out.data["dropped"])
