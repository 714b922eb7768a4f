"""A broken recall index heals (issue 27; docs/design/recall.md).

The index is a cache: whatever state its file is in (garbled pages, a directory or a dangling
symlink in its place), `recall` says plainly that it is damaged and how to rebuild it (never
`internal_error`), the commands that only consult it carry on, and `recall rebuild` recovers
without touching a case file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Cli


def garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for at in range(0, len(data), 97):
        data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "something").write_text("not an index\n")


def dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "nowhere" / "index.sqlite")


def snapshot(state: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted((state / "sessions").rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


@pytest.mark.parametrize("damage", [garble, directory, dangling], ids=lambda f: f.__name__)
def test_a_damaged_index_is_reported_and_rebuilt_without_touching_cases(
    cli: Cli, env: dict[str, str], damage: Callable[[Path], None]
) -> None:
    task = cli.open("Fix the login redirect in the checkout flow")
    assert cli("case", "evidence", "add", task, "--claim", "the redirect drops the cart").code == 0
    built = cli("recall", "rebuild")
    assert built.code == 0, built.stdout
    index = Path(built.data["path"])
    assert cli("recall", "redirect").code == 0
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    damage(index)
    state = Path(env["CORTEX_STATE_DIR"])
    cases = snapshot(state)

    out = cli("recall", "redirect")
    assert out.code == 4, out.stdout
    assert out.error_code == "recall_index_damaged"
    assert "recall rebuild" in out.envelope["error"]["message"]
    assert "Traceback" not in out.stdout + out.stderr
    # Writing commands that only consult the index go on.
    assert cli("case", "note", task, "still working").code == 0
    assert cli.open("Another redirect to fix") is not None
    cases = snapshot(state)

    healed = cli("recall", "rebuild")
    assert healed.code == 0, healed.stdout
    assert Path(healed.data["path"]) == index
    assert index.is_file()
    assert not index.is_symlink()
    assert cli("recall", "redirect").code == 0
    assert cli("recall", "rebuild", "--verify").data["verify"]["agree"] is True
    assert snapshot(state) == cases
    leftovers = [p for p in index.parent.iterdir() if p.name.startswith(index.name + ".damaged")]
    if damage is directory:  # set aside, never deleted: whatever it held is still there
        assert len(leftovers) == 1
        assert (leftovers[0] / "something").exists()
        shutil.rmtree(leftovers[0])
    assert os.listdir(index.parent)


def test_reindex_also_recovers(cli: Cli) -> None:
    cli.open("Fix the login redirect")
    index = Path(cli("recall", "rebuild").data["path"])
    dangling(index)
    out = cli("recall", "reindex")
    assert out.code == 0, out.stdout
    assert index.is_file()
