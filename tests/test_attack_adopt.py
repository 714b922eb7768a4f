"""Attacks on `cortex adopt` (issue 28): a planted store under the state root must never make
adopt move, delete or follow anything outside the stores it adopts (docs/design/storage.md,
"Archive, remove, adopt"). Real repositories moved on disk, real symlinks."""

from __future__ import annotations

import os
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
        import shutil

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
