"""`cortex case read-artifact`: bounded, redacted previews of raw output a case cites."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from conftest import Cli, case_path, configure_verifiers, ready_to_verify, tree_state

MADE_UP_TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"


def add_raw(cli: Cli, task: str, raw: bytes, *extra: str) -> tuple[str, str]:
    """Evidence with raw output; returns (evidence id, raw ref)."""
    record = cli(
        "case", "evidence", "add", task, "--claim", "output", "--raw-file", "-", *extra, stdin=raw
    ).data["evidence"]
    return record["id"], record["rawRef"]


def test_a_small_output_is_returned_whole(cli: Cli, task: str) -> None:
    """Text under the limit comes back as stored, with its facts."""
    _, ref = add_raw(cli, task, b"12 passed in 0.3s\n")
    data = cli("case", "read-artifact", task, ref).data
    assert data["content"] == "12 passed in 0.3s\n"
    assert (data["encoding"], data["truncated"], data["sensitive"]) == ("utf-8", False, False)
    assert (data["size"], data["bytesReturned"], data["maxBytes"]) == (18, 18, 32 * 1024)


def test_a_cut_never_splits_a_character(cli: Cli, task: str) -> None:
    """A limit that falls inside a multi-byte character returns the characters before it."""
    _, ref = add_raw(cli, task, "ab€cd".encode())  # € is 3 bytes: a b [e2 82 ac] c d
    data = cli("case", "read-artifact", task, ref, "--max-bytes", "4").data
    assert data["content"] == "ab"
    assert data["bytesReturned"] == 2
    assert data["truncated"] is True


def test_the_limit_is_bounded(cli: Cli, task: str) -> None:
    """More than 128 KiB, or nothing, is invalid input."""
    _, ref = add_raw(cli, task, b"x\n")
    for wrong in ("0", str(128 * 1024 + 1)):
        assert cli("case", "read-artifact", task, ref, "--max-bytes", wrong).code == 4


def test_a_ref_of_another_case_is_refused(cli: Cli, task: str) -> None:
    """A raw output is readable only through its own case."""
    other = cli.open("another task")
    _, ref = add_raw(cli, other, b"theirs\n")
    assert cli("case", "read-artifact", task, ref).error_code == "refused"
    assert cli("case", "read-artifact", other, ref).code == 0


def test_an_uncited_or_malformed_ref_is_not_read(cli: Cli, task: str) -> None:
    """A raw id the case never cited is not found; a malformed ref is invalid input."""
    ghost = f"case://{task}/raw/raw_01M8QJ6ZGK2P9Y1N9GCHEKDY5A"
    assert cli("case", "read-artifact", task, ghost).error_code == "not_found"
    for bad in ("case://x/raw/y", f"case://{task}/raw/../case.json", "/etc/passwd", ""):
        assert cli("case", "read-artifact", task, bad).code == 4, bad


def test_a_symlink_planted_in_raw_is_refused(cli: Cli, task: str, tmp_path: Path) -> None:
    """The blob is opened without following links: a swapped-in symlink is an integrity error."""
    _, ref = add_raw(cli, task, b"real\n")
    secret = tmp_path / "outside.txt"
    secret.write_text("not the case's\n")
    blob = case_path(cli.env, task) / "raw" / (ref.rsplit("/", 1)[1] + ".txt")
    blob.unlink()
    blob.symlink_to(secret)
    out = cli("case", "read-artifact", task, ref)
    assert out.error_code == "integrity_error"
    assert "not the case's" not in out.stdout


def test_binary_needs_allow_binary_and_is_sensitive(cli: Cli, task: str) -> None:
    """Binary output is refused unless asked for, then bounded base64, marked sensitive."""
    payload = bytes(range(256)) * 4
    _, ref = add_raw(cli, task, payload)
    assert cli("case", "read-artifact", task, ref).error_code == "refused"
    data = cli("case", "read-artifact", task, ref, "--allow-binary", "--max-bytes", "100").data
    assert data["encoding"] == "base64"
    assert data["sensitive"] is True
    assert base64.b64decode(data["content"]) == payload[:100]


def test_redaction_applies_again_on_read(cli: Cli, task: str) -> None:
    """Text stored clean but matching a literal configured since is hidden in the preview."""
    _, ref = add_raw(cli, task, b"tenant tenant-7731-made-up failed\n")
    cli.env["CORTEX_REDACT_LITERALS"] = "tenant-7731-made-up"
    data = cli("case", "read-artifact", task, ref).data
    assert "tenant-7731-made-up" not in data["content"]
    assert data["sensitive"] is True


def test_a_huge_blob_is_previewed_in_bounded_memory(cli: Cli, task: str) -> None:
    """A 1 GB (sparse) raw file: only the preview is read."""
    _, ref = add_raw(cli, task, b"start\n")
    blob = case_path(cli.env, task) / "raw" / (ref.rsplit("/", 1)[1] + ".txt")
    with blob.open("r+b") as handle:
        handle.truncate(1 << 30)
    data = cli("case", "read-artifact", task, ref, "--allow-binary", "--max-bytes", "64").data
    assert data["size"] == 1 << 30
    assert data["truncated"] is True
    assert data["bytesReturned"] == 64


def test_receipt_artifacts_are_readable_and_reads_never_write(
    cli: Cli, repo: Path, env: dict[str, str], state_root: Path
) -> None:
    """A verifier's output, cited by its receipt, previews with the token already redacted."""
    configure_verifiers(repo, env, {"unit": ["sh", "-c", f"echo token {MADE_UP_TOKEN}"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    receipt = cli("case", "verify", task).data["receipts"][0]
    before = tree_state(state_root)
    data = cli("case", "read-artifact", task, receipt["artifact"]).data
    assert "token" in data["content"]
    assert MADE_UP_TOKEN not in data["content"]
    assert tree_state(state_root) == before
    assert os.path.exists(case_path(env, task) / "verification.json")
