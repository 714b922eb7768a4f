"""Adversarial tests for tree artifacts (`evidence add --raw-dir`, `read-artifact --path`).

Every attack here ran against the real code: real directories with swapped entries, hostile
names, sparse files at the size limits, forged manifests and journals, processes killed with
SIGKILL mid-commit, and a real `cortex serve` process. Where an attack needs an exact
interleaving (an entry swapped between the listing and the open), the swap is done from a hook
wrapped around one walk step, which is the race made deterministic. Attacks that were defended
are plain tests that guard the behaviour; each confirmed defect is a strict xfail whose reason
starts with "BUG:", so it fails loudly once fixed (docs/design/artifacts.md is the contract).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from artifact_kit import TOKEN, add_tree, listing
from conftest import CHILDREN, Cli, case_path, tree_state
from crash_kit import DEBRIS, RAW_POINTS, watch

from cortex.cases.bounds import (
    RAW_BLOB_MAX,
    TREE_BYTES_MAX,
    TREE_DEPTH_MAX,
    TREE_FILES_MAX,
    TREE_WALK_MAX,
)
from cortex.kernel.views import artifact
from cortex.workspace import raw_tree

# Helpers -----------------------------------------------------------------------------------


def add(cli: Cli, task: str, tree: Path | str, *extra: str) -> Any:
    """`evidence add --raw-dir` without asserting success."""
    return cli(
        "case", "evidence", "add", task, "--claim", "tool output", "--raw-dir", str(tree), *extra
    )


def read(cli: Cli, task: str, ref: str, *extra: str) -> Any:
    return cli("case", "read-artifact", task, ref, *extra)


def raw_dir(cli: Cli, task: str) -> Path:
    return case_path(cli.env, task) / "raw"


def manifest_of(cli: Cli, task: str, ref: str) -> tuple[Path, dict[str, Any]]:
    """The manifest file a tree ref names, and its decoded content."""
    path = raw_dir(cli, task) / (ref.rsplit("/", 1)[1] + ".tree")
    data: dict[str, Any] = json.loads(path.read_bytes())
    return path, data


def every_byte_of(root: Path) -> bytes:
    """Everything stored under `root` (names and contents), to look for a secret anywhere."""
    out: list[bytes] = []
    for dirpath, dirnames, filenames in os.walk(root):
        out.extend(os.fsencode(name) for name in dirnames + filenames)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                out.append(Path(path).read_bytes())
    return b"\n".join(out)


def stored(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """tree_state without lock files, which every writer stamps with its name, even one that
    then refuses."""
    return {k: v for k, v in tree_state(root).items() if not k.endswith("lock")}


def audit_ok(cli: Cli, task: str) -> dict[str, Any]:
    out = cli("case", "audit", task)
    assert out.code == 0, out.stdout
    report: dict[str, Any] = out.data
    return report


def hook_walk(
    monkeypatch: pytest.MonkeyPatch, step: str, name: str, action: Callable[[], None]
) -> None:
    """Run `action` once, right before the walk handles the entry `name` (a deterministic race).

    `step` is "entry" (after the parent's listing classified it, before anything else) or
    "file" (just before the file is opened).
    """
    done: list[bool] = []
    if step == "entry":
        real_entry = raw_tree._Walk.entry

        def entry(self: Any, item: os.DirEntry[str], parts: tuple[str, ...]) -> None:
            if item.name == name and not done:
                done.append(True)
                action()
            real_entry(self, item, parts)

        monkeypatch.setattr(raw_tree._Walk, "entry", entry)
    else:
        real_file = raw_tree._Walk.file

        def file(self: Any, path: str, relative: str) -> None:
            if relative == name and not done:
                done.append(True)
                action()
            real_file(self, path, relative)

        monkeypatch.setattr(raw_tree._Walk, "file", file)


def fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A small, ordinary report directory."""
    tree = tmp_path / "reports"
    (tree / "junit").mkdir(parents=True)
    (tree / "junit" / "test_cart.xml").write_text('<testsuite tests="5" failures="0"/>\n')
    (tree / "summary.txt").write_text("5 tests, 0 failures\n")
    return tree


# Capture: races while walking ---------------------------------------------------------------


@pytest.mark.parametrize("where", ["directory", "parent-of-file", "root"])
def test_the_walk_never_follows_a_directory_swapped_for_a_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the tree")
    (outside / "inside.txt").write_text("outside the tree, same name")
    (outside / "sub").mkdir()
    (outside / "sub" / "inside.txt").write_text("outside the tree, nested")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "inside.txt").write_text("inside")

    def swap() -> None:
        (root / "sub").rename(tmp_path / "sub-moved")
        (root / "sub").symlink_to(outside, target_is_directory=True)

    if where == "directory":
        hook_walk(monkeypatch, "entry", "sub", swap)
    elif where == "parent-of-file":
        hook_walk(monkeypatch, "file", "sub/inside.txt", swap)
    else:
        # --raw-dir itself, swapped between capture()'s lstat and the first listing.
        real_directory = raw_tree._Walk.directory
        swapped: list[bool] = []

        def directory(self: Any, fd: int, parts: tuple[str, ...]) -> None:
            if not swapped:
                swapped.append(True)
                root.rename(tmp_path / "root-moved")
                root.symlink_to(outside, target_is_directory=True)
            real_directory(self, fd, parts)

        monkeypatch.setattr(raw_tree._Walk, "directory", directory)
    captured = raw_tree.capture(str(root))
    contents = [data for _, data in captured.members]
    assert all(b"outside the tree" not in data for data in contents), captured.members


@pytest.mark.timeout(30)
def test_a_file_swapped_for_a_fifo_a_symlink_or_a_directory_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swaps between the listing and the open: never followed, never blocking, never kept."""
    (tmp_path / "outside.txt").write_text("outside the tree")
    root = tmp_path / "root"
    root.mkdir()
    for name in ("a-fifo", "b-link", "c-dir"):
        (root / name).write_text("original")
    (root / "d-dir-to-fifo").mkdir()

    def to_fifo() -> None:
        (root / "a-fifo").unlink()
        os.mkfifo(root / "a-fifo")

    def to_link() -> None:
        (root / "b-link").unlink()
        (root / "b-link").symlink_to(tmp_path / "outside.txt")

    def to_dir() -> None:
        (root / "c-dir").unlink()
        (root / "c-dir").mkdir()

    def dir_to_fifo() -> None:
        (root / "d-dir-to-fifo").rmdir()
        os.mkfifo(root / "d-dir-to-fifo")

    real_file = raw_tree._Walk.file
    swaps = {"a-fifo": to_fifo, "b-link": to_link, "c-dir": to_dir}

    def file(self: Any, path: str, relative: str) -> None:
        if relative in swaps:
            swaps.pop(relative)()
        real_file(self, path, relative)

    monkeypatch.setattr(raw_tree._Walk, "file", file)
    hook_walk(monkeypatch, "entry", "d-dir-to-fifo", dir_to_fifo)
    started = time.monotonic()
    captured = raw_tree.capture(str(root))
    assert time.monotonic() - started < 5, "nothing blocks on a FIFO"
    assert captured.members == []
    reasons = dict(captured.skipped)
    assert set(reasons) == {"a-fifo", "b-link", "c-dir", "d-dir-to-fifo"}, reasons
    assert "not a regular file" in reasons["a-fifo"]
    assert "cannot be read" in reasons["b-link"]
    assert "not a regular file" in reasons["c-dir"]
    assert "cannot be listed" in reasons["d-dir-to-fifo"]


@pytest.mark.parametrize("change", ["grows", "shrinks"])
def test_a_file_that_changes_size_while_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """The file changes between the fstat and the read: listed as changed, not kept torn."""
    root = tmp_path / "root"
    root.mkdir()
    target = root / "live.log"
    target.write_bytes(b"0123456789" * 100)
    (root / "stable.log").write_text("stable\n")
    real_read = os.read
    done: list[bool] = []

    def racing_read(fd: int, size: int) -> bytes:
        if not done and fd_path(fd) == str(target):
            done.append(True)
            with target.open("r+b") as handle:
                if change == "grows":
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"more output\n")
                else:
                    handle.truncate(10)
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", racing_read)
    captured = raw_tree.capture(str(root))
    monkeypatch.undo()
    assert done
    assert [path for path, _ in captured.members] == ["stable.log"]
    assert dict(captured.skipped) == {"live.log": "changed while it was read"}


def test_a_read_error_on_one_file_is_listed_not_fatal(
    cli: Cli, task: str, reports: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = reports / "bad-sector.log"
    bad.write_text("unreadable\n")
    real_read = os.read

    def failing_read(fd: int, size: int) -> bytes:
        if fd_path(fd) == str(bad):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", failing_read)
    out = add(cli, task, reports)
    monkeypatch.undo()
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert "bad-sector.log" in {item["path"] for item in data["skipped"]}
    assert {f["path"] for f in data["files"]} == {"junit/test_cart.xml", "summary.txt"}


def _proc_attr_fails() -> bool:
    try:
        with open(f"/proc/{os.getpid()}/attr/current", "rb") as handle:
            handle.read()
    except OSError:
        return True
    return False


@pytest.mark.timeout(60)
def test_proc_as_raw_dir_answers_in_bounded_time(cli: Cli, task: str) -> None:
    if not os.path.isdir(f"/proc/{os.getpid()}/attr") or not _proc_attr_fails():
        pytest.skip("needs a Linux /proc where attr/current cannot be read (no LSM)")
    started = time.monotonic()
    out = add(cli, task, f"/proc/{os.getpid()}/attr")
    assert time.monotonic() - started < 30
    assert out.code == 0, out.stdout


@pytest.mark.timeout(60)
def test_dev_as_raw_dir_opens_no_device_and_does_not_hang(cli: Cli, task: str) -> None:
    if not os.path.isdir("/dev"):
        pytest.skip("needs /dev")
    started = time.monotonic()
    out = add(cli, task, "/dev")
    assert time.monotonic() - started < 30
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    skipped = {item["path"]: item["reason"] for item in data["skipped"]}
    for device in ("null", "zero", "tty", "random", "urandom"):
        if os.path.exists(f"/dev/{device}"):
            assert "never" in skipped[device], device
    assert data["walked"] <= TREE_WALK_MAX


def test_permission_denied_entries_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be opened and a directory that cannot be listed are skipped, with
    the reason. (Injected: the suite may run as root, where chmod 000 denies nothing.)"""
    root = tmp_path / "root"
    (root / "locked-dir").mkdir(parents=True)
    (root / "locked-dir" / "inner.txt").write_text("inner")
    (root / "locked.txt").write_text("locked")
    (root / "open.txt").write_text("open")
    real_open = os.open

    # The walk opens each entry by its name relative to the directory it listed.
    def denying_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) in {"locked.txt", "locked-dir"}:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying_open)
    captured = raw_tree.capture(str(root))
    monkeypatch.undo()
    assert [path for path, _ in captured.members] == ["open.txt"]
    reasons = dict(captured.skipped)
    assert reasons["locked.txt"].startswith("cannot be read")
    assert reasons["locked-dir"].startswith("cannot be listed")


# Capture: names, depth, sizes ----------------------------------------------------------------


def test_hostile_names_are_skipped_or_kept_exactly(cli: Cli, task: str, tmp_path: Path) -> None:
    """Non-UTF-8, newline and over-long names are skipped (escaped); spaces-only names,
    Unicode normalization twins and case twins are kept as distinct members, each read back
    exactly by its own name; a 0-byte file reads back empty."""
    root = tmp_path / "names"
    root.mkdir()
    broot = os.fsencode(root)
    with open(broot + b"/latin1-\xe9.txt", "wb") as handle:
        handle.write(b"latin-1 name")
    os.mkdir(broot + b"/dir-\xff")
    with open(broot + b"/dir-\xff/inner.txt", "wb") as handle:
        handle.write(b"under a non-UTF-8 directory")
    (root / "line\nbreak.txt").write_text("newline")
    nfc, nfd = unicodedata.normalize("NFC", "é.txt"), unicodedata.normalize("NFD", "é.txt")
    (root / nfc).write_text("composed")
    (root / nfd).write_text("decomposed")
    (root / "Case.txt").write_text("upper")
    (root / "case.txt").write_text("lower")
    (root / "   ").write_text("spaces")
    (root / "empty").write_bytes(b"")
    deep = root / ("l" * 250) / ("m" * 250)
    deep.mkdir(parents=True)
    (deep / ("n" * 40)).write_text("path over 512 bytes")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    ref = out.data["evidence"]["rawRef"]
    data = listing(cli, task, ref)
    paths = [f["path"] for f in data["files"]]
    assert sorted(paths) == sorted(["   ", "Case.txt", "case.txt", "empty", nfc, nfd])
    skipped = {item["path"]: item["reason"] for item in data["skipped"]}
    assert "latin1-\\udce9.txt" in skipped
    assert "dir-\\udcff" in skipped, "the directory is refused, never entered"
    assert "line\\nbreak.txt" in skipped
    assert any("over 512 bytes" in reason for reason in skipped.values())
    expected = {
        nfc: "composed",
        nfd: "decomposed",
        "Case.txt": "upper",
        "case.txt": "lower",
        "   ": "spaces",
        "empty": "",
    }
    for path, content in expected.items():
        member = read(cli, task, ref, "--path", path).data
        assert member["content"] == content, path
    audit_ok(cli, task)


def test_depth_is_bounded_at_exactly_sixteen_components(
    cli: Cli, task: str, tmp_path: Path
) -> None:
    root = tmp_path / "deep"
    parts = [f"d{n}" for n in range(TREE_DEPTH_MAX - 1)]
    (root.joinpath(*parts)).mkdir(parents=True)
    (root.joinpath(*parts, "leaf.txt")).write_text("sixteen components")
    (root.joinpath(*parts, "d15")).mkdir()
    (root.joinpath(*parts, "d15", "too-deep.txt")).write_text("seventeen")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    ref = out.data["evidence"]["rawRef"]
    data = listing(cli, task, ref)
    leaf = "/".join([*parts, "leaf.txt"])
    assert [f["path"] for f in data["files"]] == [leaf]
    assert {s["path"]: s["reason"] for s in data["skipped"]} == {
        "/".join([*parts, "d15"]): f"deeper than {TREE_DEPTH_MAX} levels"
    }
    assert read(cli, task, ref, "--path", leaf).data["content"] == "sixteen components"


def test_a_hard_link_to_an_outside_file_is_kept_as_content(
    cli: Cli, task: str, tmp_path: Path
) -> None:
    """Decision: a hard link is not a leak. It is a directory entry of the tree for the same
    inode (not a pointer that is followed), and making one needs access to the file already
    (protected_hardlinks). Its bytes are kept like any member, redacted, and the original is
    never written to."""
    outside = tmp_path / "outside.txt"
    outside.write_text(f"linked content {TOKEN}\n")
    root = tmp_path / "root"
    root.mkdir()
    os.link(outside, root / "hard.txt")
    before = outside.stat()
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    ref = out.data["evidence"]["rawRef"]
    member = read(cli, task, ref, "--path", "hard.txt").data
    assert member["content"].startswith("linked content")
    assert TOKEN not in member["content"]
    after = outside.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_nlink) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_nlink,
    )


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def test_sizes_at_the_limits_are_exact(cli: Cli, task: str, tmp_path: Path) -> None:
    """A member of exactly RAW_BLOB_MAX is kept and one byte more is not; members up to exactly
    TREE_BYTES_MAX together are kept, and past it a byte-sized file is skipped (a 0-byte one
    still fits)."""
    assert TREE_BYTES_MAX == 2 * RAW_BLOB_MAX
    root = tmp_path / "sizes"
    root.mkdir()
    _sparse(root / "a-full", RAW_BLOB_MAX)
    _sparse(root / "b-too-big", RAW_BLOB_MAX + 1)
    _sparse(root / "c-full", RAW_BLOB_MAX)
    (root / "d-one-byte").write_bytes(b"x")
    (root / "e-empty").write_bytes(b"")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert {f["path"]: f["size"] for f in data["files"]} == {
        "a-full": RAW_BLOB_MAX,
        "c-full": RAW_BLOB_MAX,
        "e-empty": 0,
    }
    assert {s["path"] for s in data["skipped"]} == {"b-too-big", "d-one-byte"}


def test_the_total_bytes_bound_marks_the_listing_cut(cli: Cli, task: str, tmp_path: Path) -> None:
    root = tmp_path / "sizes"
    root.mkdir()
    _sparse(root / "a-full", RAW_BLOB_MAX)
    _sparse(root / "b-full", RAW_BLOB_MAX)
    (root / "c-one-byte").write_bytes(b"x")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert [s["path"] for s in data["skipped"]] == ["c-one-byte"]
    assert data["truncated"] is True


def test_a_huge_directory_is_walked_in_bounded_time(cli: Cli, task: str, tmp_path: Path) -> None:
    root = tmp_path / "huge"
    root.mkdir()
    for n in range(10_000):
        os.close(os.open(root / f"f{n:05d}.log", os.O_CREAT | os.O_WRONLY, 0o600))
    started = time.monotonic()
    out = add(cli, task, root)
    assert time.monotonic() - started < 5
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert (data["walked"], data["count"], data["truncated"]) == (
        TREE_WALK_MAX,
        TREE_FILES_MAX,
        True,
    )
    assert [f["path"] for f in data["files"]][:2] == ["f00000.log", "f00001.log"], "sorted"


# Redaction ----------------------------------------------------------------------------------


def _private_empty(root: Path) -> None:
    # "</private>": an orphan closing tag, which the redactor drops entirely.
    (root / "<").mkdir()
    (root / "<" / "private>").write_text("member whose path redacts to ''")


def _private_trailing_slash(root: Path) -> None:
    (root / "logs" / "<").mkdir(parents=True)
    (root / "logs" / "<" / "private>").write_text("member whose path redacts to 'logs/'")


def _private_self_closing(root: Path) -> None:
    # "<private/>": a self-closing tag, also dropped.
    (root / "<private").mkdir()
    (root / "<private" / ">").write_text("member whose path redacts to ''")


def _grows_past_512(root: Path) -> None:
    # Each `pwd=abcd` (8 bytes) is stored as `pwd=[REDACTED]` (14): 505 bytes become 841.
    part = "pwd=abcd " * 28
    (root / part).mkdir()
    (root / part / part).write_text("member whose redacted path is over 512 bytes")


@pytest.mark.parametrize(
    "plant",
    [_private_empty, _private_trailing_slash, _private_self_closing, _grows_past_512],
    ids=["orphan-closing-tag", "trailing-slash", "self-closing-tag", "grows-past-512"],
)
def test_a_name_the_redactor_breaks_never_corrupts_the_case(
    cli: Cli, task: str, tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "ok.txt").write_text("fine\n")
    plant(root)
    out = add(cli, task, root)
    # Either refused with nothing written, or stored so that it reads back and audits clean.
    if out.code != 0:
        assert out.error_code == "invalid_input"
        return
    ref = out.data["evidence"]["rawRef"]
    data = read(cli, task, ref)
    assert data.code == 0, data.stdout
    assert read(cli, task, ref, "--path", "ok.txt").data["content"] == "fine\n"
    audit_ok(cli, task)


def test_names_that_redact_alike_stay_distinct(cli: Cli, task: str, tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / ("ghp_" + "A" * 36)).write_text("first")
    (root / ("ghp_" + "B" * 36)).write_text("second")
    (root / "[REDACTED]").write_text("third")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    paths = [f["path"] for f in data["files"]]
    assert len(paths) == 3
    assert len(set(paths)) == len(paths), paths


@pytest.mark.parametrize("flaw", ["control", "non-utf8", "backslash"])
def test_a_secret_in_a_refused_name_is_redacted_not_fatal(
    cli: Cli, task: str, tmp_path: Path, flaw: str
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "ok.txt").write_text("fine\n")
    if flaw == "control":
        (root / f"leak-{TOKEN}\x01.txt").write_text("x")
    elif flaw == "backslash":
        (root / f"leak-{TOKEN}\\.txt").write_text("x")
    else:
        with open(os.fsencode(root) + f"/leak-{TOKEN}".encode() + b"\xff", "wb") as handle:
            handle.write(b"x")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    assert TOKEN.encode() not in every_byte_of(case_path(cli.env, task))
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert [f["path"] for f in data["files"]] == ["ok.txt"]
    assert len(data["skipped"]) == 1


@pytest.mark.parametrize("name", ["--token", "--password", "--secret", "-pwd"])
def test_a_benign_skipped_name_never_refuses_the_capture(
    cli: Cli, task: str, tmp_path: Path, name: str
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "ok.txt").write_text("fine\n")
    (root / name).symlink_to("ok.txt")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert data["skipped"] == [{"path": name, "reason": "a symlink (never followed)"}]


def test_a_redacted_skipped_name_marks_the_evidence_sensitive(
    cli: Cli, task: str, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "plain.txt").write_text("nothing secret\n")
    (root / f"link-{TOKEN}").symlink_to("/etc/hostname")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    evidence = out.data["evidence"]
    skipped = listing(cli, task, evidence["rawRef"])["skipped"]
    assert skipped == [{"path": "link-[REDACTED]", "reason": "a symlink (never followed)"}]
    assert evidence["sensitivity"] == "sensitive"


def test_secrets_in_names_contents_and_binary_members_are_never_stored(
    cli: Cli, task: str, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    (root / f"dir-{TOKEN}").mkdir(parents=True)
    (root / f"dir-{TOKEN}" / "inner.txt").write_text("inner\n")
    (root / f"name-{TOKEN}.txt").write_text("named after a token\n")
    # A secret split over lines as a shell/YAML file would write it, and a PEM key.
    (root / "env.txt").write_text(
        "API_TOKEN=\\\n  s3cr3t-value-123456\npassword: hunter2-hunter2\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\nxyz\n-----END RSA PRIVATE KEY-----\n"
    )
    (root / "core.bin").write_bytes(b"\x00\x01ELF\x00" + TOKEN.encode() + b"\x00\xff\xfe")
    out = add(cli, task, root)
    assert out.code == 0, out.stdout
    evidence = out.data["evidence"]
    assert evidence["sensitivity"] == "sensitive"
    on_disk = every_byte_of(case_path(cli.env, task))
    for secret in (TOKEN, "hunter2-hunter2", "MIIEabc"):
        assert secret.encode() not in on_disk, secret
    binary = read(cli, task, evidence["rawRef"], "--path", "core.bin", "--allow-binary").data
    assert binary["sensitive"] is True
    audit_ok(cli, task)


def test_a_configured_literal_in_names_is_redacted_and_every_member_stays_readable(
    cli: Cli, task: str, reports: Path
) -> None:
    """The listing is not redacted as one text (its JSON structure would be read as text), but
    every name in it is: a configured literal in a name is gone, the member still readable."""
    cli.env["CORTEX_REDACT_LITERALS"] = "junit"
    out = add(cli, task, reports)
    assert out.code == 0, out.stdout
    assert out.data["evidence"]["sensitivity"] == "sensitive"
    data = listing(cli, task, out.data["evidence"]["rawRef"])
    assert "junit" not in json.dumps(data)
    for item in data["files"]:
        member = read(cli, task, out.data["evidence"]["rawRef"], "--path", item["path"])
        assert member.code == 0, member.stdout


# Reading ------------------------------------------------------------------------------------

SELECTOR_EVASIONS = [
    "%2e%2e/summary.txt",
    "junit%2ftest_cart.xml",
    "junit\u2215test_cart.xml",  # DIVISION SLASH
    "junit\uff0ftest_cart.xml",  # FULLWIDTH SOLIDUS
    "\uff0e\uff0e/summary.txt",  # fullwidth dots, '..' under NFKC
    "\u2025/summary.txt",  # TWO DOT LEADER, '..' under NFKC
    "summary.txt.",
    "summary.txt ",
    " summary.txt",
    "SUMMARY.TXT",
    "summary.txt\udcc0\udcaf",  # an overlong '/' smuggled through surrogateescape
    "\udcc0\udcae\udcc0\udcae/summary.txt",
    "./junit/test_cart.xml",
    "junit/./test_cart.xml",
    "junit/test_cart.xml/",
    "junit//test_cart.xml",
    "//summary.txt",
    "junit/test_cart.xml\x00",
    "junit/test_cart.xml\u200b",  # zero width space
    "junit/test_cart.xml\u2028",  # line separator
    "junit\u202e/test_cart.xml",
    "..",
    ".",
    "raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.txt",
    "../case.json",
    "c:/summary.txt",
]


def test_path_selector_evasions_never_read_anything_else(
    cli: Cli, task: str, reports: Path
) -> None:
    (reports / "case.json").write_text("decoy\n")
    ref = add_tree(cli, task, reports)["rawRef"]
    for path in SELECTOR_EVASIONS:
        out = read(cli, task, ref, "--path", path)
        assert (out.code, out.error_code) in {(3, "not_found"), (4, "invalid_input")}, path
        assert "content" not in out.stdout, path
    # The members themselves, named exactly, still read.
    assert read(cli, task, ref, "--path", "junit/test_cart.xml").code == 0


@pytest.mark.parametrize(
    "forge",
    [
        "member-raw-traversal",
        "member-raw-absolute",
        "dotdot-path",
        "not-json",
        "wrong-format",
        "huge",
        "symlink",
        "fifo",
        "directory",
    ],
)
def test_a_forged_or_planted_listing_reads_nothing_outside_the_case(
    cli: Cli, task: str, reports: Path, tmp_path: Path, forge: str
) -> None:
    other = cli.open("another case")
    theirs = add_tree(cli, other, reports)
    their_raw = raw_dir(cli, other)
    _, their_manifest = manifest_of(cli, other, theirs["rawRef"])
    their_member = their_manifest["files"][0]["raw"]
    ref = add_tree(cli, task, reports)["rawRef"]
    path, manifest = manifest_of(cli, task, ref)
    first = manifest["files"][0]["path"]
    if forge == "member-raw-traversal":
        manifest["files"][0]["raw"] = f"../../{other}/raw/{their_member}"
    elif forge == "member-raw-absolute":
        manifest["files"][0]["raw"] = str(their_raw / their_member)
    elif forge == "dotdot-path":
        manifest["files"][0]["path"] = "../" + first
        first = "../" + first
    if forge in {"member-raw-traversal", "member-raw-absolute", "dotdot-path"}:
        path.write_text(json.dumps(manifest))
    elif forge == "not-json":
        path.write_bytes(b"\xff\xfenot json at all")
    elif forge == "wrong-format":
        manifest["format"] = "cortex-tree/999"
        path.write_text(json.dumps(manifest))
    elif forge == "huge":
        _sparse(path, 17 * 1024 * 1024)
    elif forge == "symlink":
        decoy = tmp_path / "decoy.tree"
        decoy.write_text(json.dumps(manifest))
        path.unlink()
        path.symlink_to(decoy)
    elif forge == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        path.unlink()
        path.mkdir()
    listing_out = read(cli, task, ref)
    member_out = read(cli, task, ref, "--path", "summary.txt" if first.startswith("..") else first)
    # A listing only repeats the manifest; a forged member raw id may show up there, but
    # the member read is refused before any path is built from it.
    checked = [member_out] if forge.startswith("member-raw") else [listing_out, member_out]
    for out in checked:
        assert out.code in {3, 4}, (forge, out.stdout)
    for out in (listing_out, member_out):
        assert "tests=" not in out.stdout, "nothing of any blob was read"
    report = cli("case", "audit", task)
    assert report.code == 4, report.stdout


def test_raw_swapped_for_a_symlink_after_the_check_is_not_followed(
    cli: Cli, task: str, reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = add_tree(cli, task, reports)["rawRef"]
    real = raw_dir(cli, task)
    planted = tmp_path / "planted-raw"
    planted.mkdir()
    tree_id = ref.rsplit("/", 1)[1]
    forged_member = "raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A"
    (planted / f"{forged_member}.txt").write_text("planted by whoever swapped raw/\n")
    (planted / f"{tree_id}.tree").write_text(
        json.dumps(
            {
                "format": "cortex-tree/1",
                "files": [
                    {"path": "summary.txt", "raw": forged_member, "size": 32, "sha256": "0" * 64}
                ],
            }
        )
    )
    real_open = artifact._open_raw_dir

    def open_then_swap(path: str) -> int:
        fd = real_open(path)
        real.rename(tmp_path / "moved-raw")
        real.symlink_to(planted, target_is_directory=True)
        return fd

    monkeypatch.setattr(artifact, "_open_raw_dir", open_then_swap)
    out = read(cli, task, ref, "--path", "summary.txt")
    # Read through the descriptor held before the swap: the real member, not the planted one.
    assert "planted by whoever" not in out.stdout
    assert out.code == 0, out.stdout
    assert "5 tests, 0 failures" in out.data["content"]


def test_tree_refs_cross_no_case_and_members_are_not_refs(
    cli: Cli, task: str, reports: Path
) -> None:
    ref = add_tree(cli, task, reports)["rawRef"]
    other = cli.open("another case")
    assert read(cli, other, ref).error_code == "refused"
    assert read(cli, other, ref, "--path", "summary.txt").error_code == "refused"
    _, manifest = manifest_of(cli, task, ref)
    # A member's own raw id is not a ref the case cites: readable only through its tree.
    for member in manifest["files"]:
        direct = read(cli, task, f"case://{task}/raw/{member['raw']}")
        assert direct.error_code == "not_found", member
        assert read(cli, task, f"case://{task}/raw/{member['raw']}", "--path", member["path"]).code
    # A ref padded or re-cased does not reach the tree either.
    for bad in (ref + "/", ref.lower(), ref + "/summary.txt", ref.replace("/raw/", "/raw//")):
        assert read(cli, task, bad).code == 4, bad


def test_max_bytes_and_binary_edges_on_members(cli: Cli, task: str, tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "euro.txt").write_bytes("ab€cd".encode())
    (root / "big.txt").write_bytes(b"y" * (200 * 1024))
    (root / "late-nul.bin").write_bytes(b"text first" + b"\x00" + b"then binary")
    ref = add_tree(cli, task, root)["rawRef"]
    for wrong in ("0", "-1", str(128 * 1024 + 1), "1e3", ""):
        assert read(cli, task, ref, "--path", "euro.txt", "--max-bytes", wrong).code == 4, wrong
    cut = read(cli, task, ref, "--path", "euro.txt", "--max-bytes", "4").data
    assert (cut["content"], cut["truncated"]) == ("ab", True)
    one = read(cli, task, ref, "--path", "euro.txt", "--max-bytes", "1").data
    assert (one["content"], one["bytesReturned"]) == ("a", 1)
    most = read(cli, task, ref, "--path", "big.txt", "--max-bytes", str(128 * 1024)).data
    assert (most["bytesReturned"], most["truncated"], most["size"]) == (
        128 * 1024,
        True,
        200 * 1024,
    )
    # Text before the first NUL within the limit is text; past it, binary needs the flag.
    head = read(cli, task, ref, "--path", "late-nul.bin", "--max-bytes", "10").data
    assert head["content"] == "text first"
    whole = read(cli, task, ref, "--path", "late-nul.bin")
    assert whole.error_code == "refused"
    assert "then binary" not in whole.stdout


# Audit ---------------------------------------------------------------------------------------


def test_audit_catches_members_and_listings_replaced_by_links(
    cli: Cli, task: str, reports: Path, tmp_path: Path
) -> None:
    ref = add_tree(cli, task, reports)["rawRef"]
    path, manifest = manifest_of(cli, task, ref)
    member = raw_dir(cli, task) / f"{manifest['files'][0]['raw']}.txt"
    copy = tmp_path / "copy.txt"
    copy.write_bytes(member.read_bytes())
    member.unlink()
    member.symlink_to(copy)  # same bytes, so only the link itself is wrong
    out = cli("case", "audit", task)
    assert out.code == 4
    codes = {e["code"] for e in out.envelope["data"]["errors"]}
    assert "symlink" in codes
    member.unlink()
    member.write_bytes(copy.read_bytes())
    member.chmod(0o600)
    audit_ok(cli, task)
    listing_copy = tmp_path / "listing.tree"
    listing_copy.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(listing_copy)
    out = cli("case", "audit", task)
    assert out.code == 4
    assert "symlink" in {e["code"] for e in out.envelope["data"]["errors"]}


@pytest.mark.parametrize("edit", ["listed-twice", "dropped", "swapped-raw", "size"])
def test_audit_catches_every_edit_of_a_listing(
    cli: Cli, task: str, reports: Path, edit: str
) -> None:
    ref = add_tree(cli, task, reports)["rawRef"]
    path, manifest = manifest_of(cli, task, ref)
    files = manifest["files"]
    if edit == "listed-twice":
        files.append(dict(files[0]))
    elif edit == "dropped":
        files.pop()
    elif edit == "swapped-raw":
        files[0]["raw"], files[1]["raw"] = files[1]["raw"], files[0]["raw"]
    else:
        files[0]["size"] += 1
    path.write_bytes(json.dumps(manifest, separators=(",", ":")).encode() + b"\n")
    out = cli("case", "audit", task)
    assert out.code == 4, edit
    assert "raw_digest" in {e["code"] for e in out.envelope["data"]["errors"]}


def test_an_extra_member_blob_is_reported_as_an_orphan(cli: Cli, task: str, reports: Path) -> None:
    add_tree(cli, task, reports)
    (raw_dir(cli, task) / "raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.txt").write_text("slipped in\n")
    report = audit_ok(cli, task)
    assert [w["code"] for w in report["warnings"]] == ["orphan_blob"]


def test_audit_catches_a_listing_planted_beside_a_file_artifact(
    cli: Cli, task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "out.txt").write_text("plain output\n")
    plain = cli(
        "case", "evidence", "add", task, "--claim", "c", "--raw-file", str(tmp_path / "out.txt")
    ).data["evidence"]
    raw_id = plain["rawRef"].rsplit("/", 1)[1]
    (raw_dir(cli, task) / f"{raw_id}.tree").write_text(
        json.dumps(
            {
                "format": "cortex-tree/1",
                "files": [{"path": "forged.txt", "raw": raw_id, "size": 13, "sha256": "0" * 64}],
            }
        )
    )
    forged = read(cli, task, plain["rawRef"])
    assert forged.code == 4, "one raw id stored as a file and as a tree is refused, not served"
    # readdir order is unspecified; sorted is one legal order (and puts .tree before .txt).
    real_listdir = os.listdir

    def sorted_listdir(path: Any = ".") -> list[str]:
        return sorted(real_listdir(path))

    monkeypatch.setattr(os, "listdir", sorted_listdir)
    out = cli("case", "audit", task)
    assert out.code == 4, out.stdout


# Durability ----------------------------------------------------------------------------------


def crash_tree(root: Path) -> Path:
    tree = root / "crash-reports"
    (tree / "junit").mkdir(parents=True)
    (tree / "junit" / "a.xml").write_text('<testsuite tests="1"/>\n')
    (tree / "junit" / "b.xml").write_text('<testsuite tests="2"/>\n')
    (tree / "summary.txt").write_text(f"3 tests\ntoken {TOKEN}\n")
    return tree


def evidence_count(cli: Cli, task: str) -> int:
    count: int = cli("case", "status", task).data["counts"]["evidence"]
    return count


def check_whole_or_nothing(cli: Cli, task: str, before: int) -> None:
    """After a kill and one more writer: the tree and its evidence whole, or neither; audit
    clean with no debris; every file in raw/ cited by a tree or evidence."""
    assert cli("case", "note", task, "the next writer").code == 0
    after = evidence_count(cli, task)
    assert after in {before + 1, before + 2}
    report = audit_ok(cli, task)
    leftovers = [w for w in report["warnings"] if w["code"] in DEBRIS]
    assert leftovers == [], leftovers
    case = case_path(cli.env, task)
    assert not [name for name in os.listdir(case) if name.startswith((".tmp-", ".bak-"))]
    assert not (case / ".journal.json").exists()
    trees = sorted((case / "raw").glob("*.tree"))
    members: set[str] = set()
    for tree in trees:
        for member in json.loads(tree.read_bytes())["files"]:
            members.add(f"{member['raw']}.txt")
    on_disk = {p.name for p in (case / "raw").iterdir()}
    assert on_disk == members | {t.name for t in trees}, "no orphan blob, no missing member"
    evidence = [
        json.loads(line)
        for line in (case / "evidence.jsonl").read_bytes().splitlines()
        if b'"rawRef"' in line and b'"rawRef":null' not in line
    ]
    assert len(evidence) == len(trees)
    for record in evidence:
        ref = record["rawRef"]
        assert len(listing(cli, task, ref)["files"]) == 3
        summary = read(cli, task, ref, "--path", "summary.txt").data["content"]
        assert summary.startswith("3 tests")
        assert TOKEN not in summary


CRASH_CHILD = str(CHILDREN / "crash_child.py")
CALL_CHILD = str(CHILDREN / "call_crash_child.py")


@pytest.mark.process
@pytest.mark.parametrize(("point", "passes"), RAW_POINTS)
def test_a_tree_commit_killed_at_every_crash_point_is_whole_or_nothing(
    cli: Cli, task: str, tmp_path: Path, point: str, passes: int
) -> None:
    tree = crash_tree(tmp_path)
    command = ["case", "evidence", "add", task, "--claim", "reports", "--raw-dir", str(tree)]
    for skip in range(passes):
        before = evidence_count(cli, task)
        argv = [sys.executable, CRASH_CHILD, point, str(skip), str(cli.cwd), json.dumps([command])]
        run = watch(argv, cli.env)
        assert run.killed, (point, skip)
        # Before anyone writes again, readers and audit see the old or the new state.
        assert evidence_count(cli, task) in {before, before + 1}
        audit_ok(cli, task)
        check_whole_or_nothing(cli, task, before)


BETWEEN_POINTS = [
    *(("cortex.cases.txn:write_new_file", "after", n) for n in range(4)),
    *(("os:link", "before", n) for n in range(4)),
    *(("os:unlink", "after", n) for n in range(5)),
]
"""Steps between the named crash points: after staging each of the 4 files (3 members and the
listing), before linking each into raw/, after removing each staged name (the 5th unlink is
the journal's, after the commit point)."""


@pytest.mark.process
@pytest.mark.parametrize("step", BETWEEN_POINTS, ids=lambda step: f"{step[1]}-{step[0]}-{step[2]}")
def test_a_tree_commit_killed_between_files_is_whole_or_nothing(
    cli: Cli, task: str, tmp_path: Path, step: tuple[str, str, int]
) -> None:
    target, when, skip = step
    tree = crash_tree(tmp_path)
    command = ["case", "evidence", "add", task, "--claim", "reports", "--raw-dir", str(tree)]
    before = evidence_count(cli, task)
    argv = [
        sys.executable,
        CALL_CHILD,
        target,
        when,
        str(skip),
        str(cli.cwd),
        json.dumps([command]),
    ]
    run = watch(argv, cli.env)
    assert run.killed
    committed = evidence_count(cli, task) - before
    assert committed == (1 if target == "os:unlink" and skip == 4 else 0)
    audit_ok(cli, task)
    check_whole_or_nothing(cli, task, before)
    assert evidence_count(cli, task) == before + 1 + committed


def _rollback_killed(cli: Cli, task: str, tmp_path: Path, skip: int) -> None:
    """Publish a whole tree and die before the commit point; then kill the next writer in the
    middle of rolling it back (before its `skip`th unlink: for each of the four published
    files the final name, then the already-gone staged name, then the journal); a third
    writer must finish it."""
    tree = crash_tree(tmp_path)
    command = ["case", "evidence", "add", task, "--claim", "reports", "--raw-dir", str(tree)]
    before = evidence_count(cli, task)
    first = [sys.executable, CRASH_CHILD, "txn.published", "0", str(cli.cwd), json.dumps([command])]
    assert watch(first, cli.env).killed
    note = ["case", "note", task, "interrupted recovery"]
    second = [
        sys.executable,
        CALL_CHILD,
        "os:unlink",
        "before",
        str(skip),
        str(cli.cwd),
        json.dumps([note]),
    ]
    run = watch(second, cli.env)
    assert run.killed, skip
    audit_ok(cli, task)
    after = evidence_count(cli, task)
    assert after in {before, before + 1}
    assert cli("case", "note", task, "third writer").code == 0
    report = audit_ok(cli, task)
    assert [w for w in report["warnings"] if w["code"] in DEBRIS] == []
    assert list(raw_dir(cli, task).iterdir()) == [], "the uncommitted tree is gone, all of it"
    assert evidence_count(cli, task) == after + 1


@pytest.mark.process
@pytest.mark.parametrize("skip", range(9))
def test_a_rollback_of_a_tree_killed_at_every_unlink_is_finished_by_the_next_writer(
    cli: Cli, task: str, tmp_path: Path, skip: int
) -> None:
    _rollback_killed(cli, task, tmp_path, skip)


def _journal(cli: Cli, task: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    case = json.loads((case_path(cli.env, task) / "case.json").read_bytes())
    return {
        "taskId": task,
        "fromRevision": case["revision"],
        "toRevision": case["revision"] + 1,
        "ledgers": {name: state["bytes"] for name, state in case["ledgers"].items()},
        "files": files,
    }


ESCAPING_ENTRIES = [
    {"staged": ".tmp-a", "final": "raw/../case.json"},
    {"staged": ".tmp-a", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree/../../case.json"},
    {"staged": ".tmp-a", "final": "../raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a", "final": "/var/raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a", "final": "raw/sub/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a", "final": "raw//raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a", "final": "refs/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree\x00"},
    {"staged": ".tmp-a", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.TREE"},
    {"staged": ".tmp-a", "final": "raw/raw_01m8qj6zgk2p9y1n9gchekdy5a.tree"},
    {"staged": ".tmp-a", "final": "raw/.tree"},
    {
        "staged": ".tmp-a",
        "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree",
        "backup": ".bak-case.json",
    },
    {"staged": "../.tmp-a", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": ".tmp-a/../../x", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
    {"staged": "case.json", "final": "raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A.tree"},
]


@pytest.mark.parametrize("entry", ESCAPING_ENTRIES, ids=range(len(ESCAPING_ENTRIES)))
def test_a_crafted_journal_escaping_raw_is_refused_by_recovery_and_audit(
    cli: Cli, task: str, reports: Path, entry: dict[str, Any]
) -> None:
    add_tree(cli, task, reports)
    case = case_path(cli.env, task)
    (case / ".tmp-a").write_text("staged")
    (case / ".journal.json").write_text(json.dumps(_journal(cli, task, [entry])))
    before = stored(case)
    out = cli("case", "note", task, "a writer meets the journal")
    assert (out.code, out.error_code) == (4, "integrity_error"), out.stdout
    assert stored(case) == before, "recovery touched nothing"
    report = cli("case", "audit", task)
    assert report.code == 4
    assert "journal" in {e["code"] for e in report.envelope["data"]["errors"]}


def test_a_crafted_journal_cannot_delete_a_committed_tree(
    cli: Cli, task: str, reports: Path
) -> None:
    ref = add_tree(cli, task, reports)["rawRef"]
    case = case_path(cli.env, task)
    path, manifest = manifest_of(cli, task, ref)
    files = [
        {"staged": ".tmp-gone-" + str(n), "final": f"raw/{m['raw']}.txt"}
        for n, m in enumerate(manifest["files"])
    ]
    files.append({"staged": ".tmp-gone-tree", "final": f"raw/{path.name}"})
    (case / ".journal.json").write_text(json.dumps(_journal(cli, task, files)))
    audit_says = cli("case", "audit", task)
    cli("case", "note", task, "a writer meets the journal")
    assert path.exists(), "the committed listing is still there"
    assert audit_says.code == 4 or cli("case", "audit", task).code == 0


def test_a_journal_with_the_wrong_inodes_cannot_delete_a_committed_tree(
    cli: Cli, task: str, reports: Path
) -> None:
    """Inodes in the journal are checked, not trusted: a guess that is not the file's own
    leaves the published blob alone."""
    ref = add_tree(cli, task, reports)["rawRef"]
    case = case_path(cli.env, task)
    path, manifest = manifest_of(cli, task, ref)
    members = [case / "raw" / f"{m['raw']}.txt" for m in manifest["files"]]
    files = [
        {"staged": f".tmp-gone-{n}", "final": f"raw/{m.name}", "inode": m.stat().st_ino + 1}
        for n, m in enumerate([*members, path])
    ]
    (case / ".journal.json").write_text(json.dumps(_journal(cli, task, files)))
    assert cli("case", "note", task, "a writer meets the journal").code == 0
    assert all(member.exists() for member in members)
    assert path.exists()
    assert cli("case", "audit", task).code == 0


# MCP -----------------------------------------------------------------------------------------


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[IO[str]]:
    with (tmp_path / "stderr.txt").open("w+") as file:
        yield file


@pytest.mark.process
@pytest.mark.parametrize("escape", ["absolute", "dotdot", "symlinked-parent"])
def test_mcp_raw_dir_stays_inside_the_workspace(
    env: dict[str, str], repo: Path, tmp_path: Path, errlog: IO[str], escape: str
) -> None:
    from mcp_kit import run_async, serving

    outside = tmp_path / "outside-secrets"
    outside.mkdir()
    (outside / "id_rsa.txt").write_text("outside the workspace\n")
    (outside / "keys").mkdir()
    (outside / "keys" / "key.txt").write_text("outside the workspace, nested\n")
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    raw_dir_arg = {
        "absolute": str(outside),
        "dotdot": "../outside-secrets",
        # Only the last component is checked for a symlink; one on the way is followed.
        "symlinked-parent": "escape/keys",
    }[escape]
    result: dict[str, Any] = {}

    async def body() -> None:
        async with serving(repo, env, errlog) as s:
            task = (await s.call("cortex_open_task", goal="g"))[0]["data"]["taskId"]
            envelope, _ = await s.call(
                "cortex_record_evidence", task_id=task, claim="c", raw_dir=raw_dir_arg
            )
            result["envelope"] = envelope

    run_async(body)
    assert result["envelope"]["ok"] is False, "a directory outside the workspace was captured"


@pytest.mark.process
def test_mcp_tree_refusals_match_the_cli(env: dict[str, str], repo: Path, errlog: IO[str]) -> None:
    from mcp_kit import run_async, serving

    tree = repo / "reports"
    (tree / "junit").mkdir(parents=True)
    (tree / "junit" / "a.xml").write_text('<testsuite tests="1"/>\n')
    (tree / "summary.txt").write_text(f"1 test\n{TOKEN}\n")
    (tree / "link").symlink_to("/etc/hostname")
    (repo / "reports-link").symlink_to(tree, target_is_directory=True)
    (repo / "a-file").write_text("x")

    async def body() -> None:
        async with serving(repo, env, errlog) as s:
            task = (await s.call("cortex_open_task", goal="g"))[0]["data"]["taskId"]
            stored, _ = await s.call(
                "cortex_record_evidence", task_id=task, claim="c", raw_dir="reports"
            )
            assert stored["ok"] is True, stored
            ref = stored["data"]["evidence"]["rawRef"]
            for bad in ("reports-link", "a-file", "missing"):
                refused, result = await s.call(
                    "cortex_record_evidence", task_id=task, claim="c", raw_dir=bad
                )
                assert refused["error"]["code"] == "invalid_input", bad
                assert (result.meta or {}).get("cortex/exitStatus") == 4
            listing_env, _ = await s.call("cortex_read_artifact", task_id=task, ref=ref)
            assert [f["path"] for f in listing_env["data"]["files"]] == [
                "junit/a.xml",
                "summary.txt",
            ]
            member, _ = await s.call(
                "cortex_read_artifact", task_id=task, ref=ref, path="summary.txt"
            )
            assert TOKEN not in member["data"]["content"]
            for path in ("../summary.txt", "/etc/passwd", "junit//a.xml", "a\x00b", "x\u202e"):
                refused, result = await s.call(
                    "cortex_read_artifact", task_id=task, ref=ref, path=path
                )
                assert refused["error"]["code"] == "invalid_input", path
                assert (result.meta or {}).get("cortex/exitStatus") == 4
            missing, result = await s.call(
                "cortex_read_artifact", task_id=task, ref=ref, path="link"
            )
            assert missing["error"]["code"] == "not_found"
            assert (result.meta or {}).get("cortex/exitStatus") == 3

    run_async(body)
    errlog.seek(0)
    assert "Traceback" not in errlog.read()
