"""Directory artifacts: `evidence add --raw-dir`, `read-artifact [--path]`, audit, and crashes.

Real directories with real symlinks, FIFOs and hostile names; real processes killed with
SIGKILL in the middle of publishing a tree (docs/design/artifacts.md).
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest
from artifact_kit import TOKEN, add_tree, listing
from conftest import CHILDREN, Cli, case_path, tree_state
from crash_kit import watch

from cortex.cases.bounds import TREE_FILES_MAX, TREE_WALK_MAX


def make_tree(root: Path) -> Path:
    """A report directory with nested files, a secret, a symlink, a FIFO and a bad name."""
    tree = root / "reports"
    (tree / "junit").mkdir(parents=True)
    (tree / "junit" / "test_auth.xml").write_text('<testsuite tests="3" failures="1"/>\n')
    (tree / "junit" / "test_cart.xml").write_text('<testsuite tests="5" failures="0"/>\n')
    (tree / "summary.txt").write_text(f"8 tests, 1 failure\ndeploy token {TOKEN}\n")
    (tree / "binary.bin").write_bytes(b"\x00\x01\x02PNG")
    (tree / "link-to-passwd").symlink_to("/etc/passwd")
    (tree / "dir-link").symlink_to(tree / "junit", target_is_directory=True)
    os.mkfifo(tree / "pipe")
    (tree / "bad\x1bname.txt").write_text("escape in the name")
    return tree


def test_a_directory_is_kept_and_listed(cli: Cli, task: str, tmp_path: Path) -> None:
    evidence = add_tree(cli, task, make_tree(tmp_path))
    assert evidence["sensitivity"] == "sensitive", "a member was redacted"
    data = listing(cli, task, evidence["rawRef"])
    assert data["kind"] == "directory"
    assert [f["path"] for f in data["files"]] == [
        "binary.bin", "junit/test_auth.xml", "junit/test_cart.xml", "summary.txt",
    ]  # fmt: skip
    reasons = {item["path"]: item["reason"] for item in data["skipped"]}
    assert "symlink" in reasons["link-to-passwd"]
    assert "symlink" in reasons["dir-link"]
    assert "not a regular file" in reasons["pipe"]
    assert "control character" in reasons["bad\\x1bname.txt"]
    assert data["truncated"] is False
    # Members read back, redacted; binary only on request.
    member = cli("case", "read-artifact", task, evidence["rawRef"], "--path", "summary.txt").data
    assert member["path"] == "summary.txt"
    assert TOKEN not in member["content"]
    assert "8 tests, 1 failure" in member["content"]
    xml = cli("case", "read-artifact", task, evidence["rawRef"], "--path", "junit/test_auth.xml")
    assert 'failures="1"' in xml.data["content"]
    refused = cli("case", "read-artifact", task, evidence["rawRef"], "--path", "binary.bin")
    assert refused.code == 5
    binary = cli("case", "read-artifact", task, evidence["rawRef"], "--path", "binary.bin",
                 "--allow-binary")  # fmt: skip
    assert binary.data["encoding"] == "base64"
    assert binary.data["sensitive"] is True
    audit = cli("case", "audit", task)
    assert audit.code == 0, audit.stdout
    assert not [w for w in audit.data["warnings"] if w["code"] == "orphan_blob"]


def test_the_same_tree_gives_the_same_listing(cli: Cli, task: str, tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    first = listing(cli, task, add_tree(cli, task, tree)["rawRef"])
    second = listing(cli, task, add_tree(cli, task, tree)["rawRef"])
    for data in (first, second):
        data.pop("ref")
    assert first == second


def test_the_walk_and_the_file_count_are_bounded(cli: Cli, task: str, tmp_path: Path) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for n in range(TREE_FILES_MAX + 30):
        (many / f"f{n:04d}.log").write_text(f"line {n}\n")
    data = listing(cli, task, add_tree(cli, task, many)["rawRef"])
    assert data["count"] == TREE_FILES_MAX
    assert data["truncated"] is True
    assert len([s for s in data["skipped"] if "file limit" in s["reason"]]) == 30
    wide = tmp_path / "wide"
    wide.mkdir()
    for n in range(TREE_WALK_MAX + 40):
        (wide / f"d{n:04d}").mkdir()
    data = listing(cli, task, add_tree(cli, task, wide)["rawRef"])
    assert data["walked"] == TREE_WALK_MAX
    assert data["truncated"] is True


PATHS_REFUSED = [
    "/etc/passwd",
    "../raw_x.txt",
    "junit/../summary.txt",
    "./summary.txt",
    "junit//test_auth.xml",
    "junit/",
    "junit\\test_auth.xml",
    "summary\x00.txt",
    "summary\x1b[31m.txt",
    "summary\x7f.txt",
    "summary\u0085.txt",
    "summary\u202e.txt",
    "a" * 600,
    "/".join(["d"] * 20),
]


@pytest.mark.parametrize("path", PATHS_REFUSED, ids=range(len(PATHS_REFUSED)))
def test_unsafe_path_selectors_are_refused(cli: Cli, task: str, tmp_path: Path, path: str) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    out = cli("case", "read-artifact", task, ref, "--path", path)
    assert (out.code, out.error_code) == (4, "invalid_input"), path
    assert out.stderr == ""


def test_empty_path_is_refused(cli: Cli, task: str, tmp_path: Path) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    out = cli("case", "read-artifact", task, ref, "--path", "")
    assert (out.code, out.error_code) == (4, "invalid_input")


def test_path_misses_and_wrong_kinds(cli: Cli, task: str, tmp_path: Path) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    missing = cli("case", "read-artifact", task, ref, "--path", "junit/none.xml")
    assert (missing.code, missing.error_code) == (3, "not_found")
    skipped = cli("case", "read-artifact", task, ref, "--path", "link-to-passwd")
    assert skipped.code == 3, "a skipped symlink is not a member"
    raw = tmp_path / "out.txt"
    raw.write_text("plain output\n")
    plain = cli("case", "evidence", "add", task, "--claim", "c", "--raw-file", str(raw))
    wrong = cli("case", "read-artifact", task, plain.data["evidence"]["rawRef"], "--path", "x")
    assert (wrong.code, wrong.error_code) == (4, "invalid_input")
    both = cli("case", "evidence", "add", task, "--claim", "c", "--raw-file", str(raw),
               "--raw-dir", str(tmp_path / "reports"))  # fmt: skip
    assert both.code == 4


def test_bad_raw_dirs_are_refused(cli: Cli, task: str, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    for target in ("missing", "file.txt", "linked"):
        out = cli("case", "evidence", "add", task, "--claim", "c", "--raw-dir",
                  str(tmp_path / target))  # fmt: skip
        assert (out.code, out.error_code) == (4, "invalid_input"), target


def test_a_symlink_planted_in_raw_is_refused(cli: Cli, task: str, tmp_path: Path) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    raw_dir = case_path(cli.env, task) / "raw"
    manifest = json.loads(next(raw_dir.glob("*.tree")).read_text())
    member = next(f for f in manifest["files"] if f["path"] == "summary.txt")
    blob = raw_dir / f"{member['raw']}.txt"
    blob.unlink()
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not the case's to show")
    blob.symlink_to(secret)
    out = cli("case", "read-artifact", task, ref, "--path", "summary.txt")
    assert out.code == 4, out.stdout
    assert "not the case's" not in out.stdout


def test_a_symlinked_raw_directory_is_refused(cli: Cli, task: str, tmp_path: Path) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    path = case_path(cli.env, task)
    (path / "raw").rename(tmp_path / "moved-raw")
    (path / "raw").symlink_to(tmp_path / "moved-raw", target_is_directory=True)
    out = cli("case", "read-artifact", task, ref)
    assert out.code == 4, out.stdout


def test_reading_writes_nothing(cli: Cli, task: str, tmp_path: Path) -> None:
    ref = add_tree(cli, task, make_tree(tmp_path))["rawRef"]
    state = Path(cli.env["CORTEX_STATE_DIR"])
    before = tree_state(state)
    listing(cli, task, ref)
    cli("case", "read-artifact", task, ref, "--path", "summary.txt")
    cli("case", "read-artifact", task, ref, "--path", "summary.txt", human=True)
    cli("case", "read-artifact", task, ref, human=True)
    assert tree_state(state) == before


def test_audit_catches_an_edited_or_missing_member(cli: Cli, task: str, tmp_path: Path) -> None:
    add_tree(cli, task, make_tree(tmp_path))
    raw_dir = case_path(cli.env, task) / "raw"
    manifest = json.loads(next(raw_dir.glob("*.tree")).read_text())
    first, second = manifest["files"][1], manifest["files"][2]
    (raw_dir / f"{first['raw']}.txt").write_text("edited after the fact")
    (raw_dir / f"{second['raw']}.txt").unlink()
    out = cli("case", "audit", task)
    assert out.code == 4
    codes = [e["code"] for e in out.envelope["data"]["errors"]]
    assert "raw_digest" in codes
    assert "reference" in codes


def test_audit_catches_an_edited_listing(cli: Cli, task: str, tmp_path: Path) -> None:
    add_tree(cli, task, make_tree(tmp_path))
    manifest = next((case_path(cli.env, task) / "raw").glob("*.tree"))
    manifest.write_text(manifest.read_text().replace("summary.txt", "summarx.txt"))
    out = cli("case", "audit", task)
    assert out.code == 4
    assert "raw_digest" in [e["code"] for e in out.envelope["data"]["errors"]]


# Crashes ----------------------------------------------------------------------------------


@pytest.mark.process
def test_a_tree_commit_killed_while_publishing_is_all_or_nothing(
    cli: Cli, task: str, tmp_path: Path
) -> None:
    """SIGKILL between the links that publish members: the next writer rolls back or keeps
    the whole tree, and audit then finds no debris."""
    tree = make_tree(tmp_path)
    command = ["case", "evidence", "add", task, "--claim", "reports", "--raw-dir", str(tree)]
    rng = random.Random(5)
    members = 5  # 4 files and the listing
    for skip in [*range(members), *(rng.randrange(members) for _ in range(4))]:
        before = cli("case", "status", task).data["counts"]["evidence"]
        argv = [sys.executable, str(CHILDREN / "call_crash_child.py"), "os:link", "after",
                str(skip), str(cli.cwd), json.dumps([command])]  # fmt: skip
        run = watch(argv, cli.env)
        assert run.killed, skip
        assert cli("case", "note", task, "the next writer").code == 0
        counts = cli("case", "status", task).data["counts"]["evidence"]
        # The note always lands; the tree is either wholly there (and readable) or gone.
        assert counts in {before + 1, before + 2}
        audit = cli("case", "audit", task)
        assert audit.code == 0, audit.stdout
        leftovers = [w["code"] for w in audit.data["warnings"]]
        assert "orphan_blob" not in leftovers
        assert "stray_file" not in leftovers
        for raw_file in (case_path(cli.env, task) / "raw").glob("*.tree"):
            files = json.loads(raw_file.read_text())["files"]
            for member in files:
                assert (raw_file.parent / f"{member['raw']}.txt").is_file()
