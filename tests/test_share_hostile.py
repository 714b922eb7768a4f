"""Fetch refuses, per case, what `audit` would refuse (issue 27; docs/design/sharing.md).

Hostile refs are built with git's own plumbing on a bare `file://` remote, exactly as someone
who can push `refs/cortex/*` would: a replica with a duplicate record id (every digest
recomputed), a shorter rewritten history, a gitlink where a ledger directory belongs, an object
over the bound, a ref that names no commit. Each is refused on its own, the good cases beside it
are imported, and a refused fetch leaves nothing behind: no line, no tracking ref, no
`replica.json`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from share_kit import Machine, copy_machine, make_machine, make_remote

from cortex.cases import ledger
from cortex.cases.records import CaseFile, Evidence, decode, encode, encode_pretty


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


@pytest.fixture
def a(tmp_path: Path, remote: Path) -> Machine:
    return make_machine(tmp_path, "a", remote)


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Machine:
    return make_machine(tmp_path, "b", remote)


def opened(machine: Machine, goal: str) -> str:
    task: str = machine.ok("case", "open", goal)["taskId"]
    machine.ok("case", "evidence", "add", task, "--claim", f"{goal}: first finding")
    return task


def case_dir(machine: Machine, task: str) -> Path:
    (found,) = Path(machine.env["CORTEX_STATE_DIR"]).glob(f"sessions/*/{task}")
    return found


def git(cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str]) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=True
    )
    return proc.stdout.decode().strip()


def nothing_written(machine: Machine, task: str, *, fresh: bool = True) -> None:
    state = Path(machine.env["CORTEX_STATE_DIR"])
    assert not list(state.glob(f"sessions/*/{task}")), "a refused case was written"
    if fresh:
        assert not (state / "replica.json").exists(), "a refused fetch minted replica.json"
    refs = machine.git("for-each-ref", "--format=%(refname)", "refs/cortex-remotes/")
    assert task not in refs, "a refused case moved its tracking ref"
    assert not machine.git("for-each-ref", "refs/cortex-incoming/"), "incoming refs were left"


def duplicate_last_evidence(directory: Path) -> None:
    """Append a second line with the id of the last evidence record, the chain recomputed."""
    case = decode((directory / "case.json").read_bytes(), CaseFile)
    state = case.ledgers["evidence"]
    body = (directory / "evidence.jsonl").read_bytes()[: state.bytes]
    last = body.splitlines()[-1]
    record = decode(last, Evidence)
    record.prev = ledger.line_hash(last)
    record.claim = "a second record under the same id"
    line = encode(record)
    (directory / "evidence.jsonl").write_bytes(body + line + b"\n")
    case.ledgers["evidence"] = msgspec.structs.replace(
        state, count=state.count + 1, bytes=len(body) + len(line) + 1, tip=ledger.line_hash(line)
    )
    (directory / "case.json").write_bytes(encode_pretty(case))


def test_a_duplicate_record_id_is_refused_and_the_good_cases_are_imported(
    a: Machine, b: Machine
) -> None:
    good = opened(a, "a good case")
    bad = opened(a, "a forged case")
    duplicate_last_evidence(case_dir(a, bad))
    assert a.cli("case", "audit", bad).code == 4  # audit refuses it here
    a.ok("case", "share", "--all")
    one = b.cli("case", "fetch", bad)
    assert one.code == 4, one.stdout
    assert one.error_code == "integrity_error"
    assert "twice" in one.envelope["error"]["message"]
    nothing_written(b, bad)
    every = b.cli("case", "fetch", "--all")
    assert every.code == 0, every.stdout
    data = every.data
    assert [c["taskId"] for c in data["cases"]] == [good]
    assert [(r["taskId"], r["code"]) for r in data["refused"]] == [(bad, "integrity_error")]
    assert any(bad in w for w in data["warnings"])
    assert b.cli("case", "audit", good).code == 0
    nothing_written(b, bad, fresh=False)


def test_a_ref_that_names_no_commit_does_not_keep_the_others_out(
    a: Machine, b: Machine, remote: Path
) -> None:
    good = opened(a, "a good case")
    a.ok("case", "share", good)
    blob = git(remote, "hash-object", "-w", "--stdin", stdin=b"not a case\n", env=a.env)
    bad = "task_01J00000000000000000000000"
    git(remote, "update-ref", f"refs/cortex/cases/{bad}", blob, env=a.env)
    data = b.ok("case", "fetch", "--all")
    assert [c["taskId"] for c in data["cases"]] == [good]
    assert [r["taskId"] for r in data["refused"]] == [bad]
    assert data["refused"][0]["code"] == "integrity_error"


def rewrite_replica(remote: Path, task: str, env: dict[str, str], entry: str, line: str) -> None:
    """Replace `entry` of the case's only replica directory with the `ls-tree` line `line`."""
    ref = f"refs/cortex/cases/{task}"
    root = git(remote, "rev-parse", f"{ref}^{{tree}}", env=env)
    (key,) = git(remote, "ls-tree", "--name-only", f"{root}:replicas", env=env).split()
    replica = git(remote, "ls-tree", f"{root}:replicas/{key}", env=env).splitlines()
    replica = [x for x in replica if x.split("\t")[1] != entry] + [line]
    new_replica = git(remote, "mktree", stdin=("\n".join(replica) + "\n").encode(), env=env)
    replicas = git(remote, "ls-tree", f"{root}:replicas", env=env).splitlines()
    replicas = [
        f"040000 tree {new_replica}\t{key}" if x.endswith(f"\t{key}") else x for x in replicas
    ]
    new_replicas = git(remote, "mktree", stdin=("\n".join(replicas) + "\n").encode(), env=env)
    top = git(remote, "ls-tree", root, env=env).splitlines()
    top = [f"040000 tree {new_replicas}\treplicas" if x.endswith("\treplicas") else x for x in top]
    new_root = git(remote, "mktree", stdin=("\n".join(top) + "\n").encode(), env=env)
    commit = git(remote, "commit-tree", new_root, "-m", "forged", env=env)
    git(remote, "update-ref", ref, commit, env=env)


def test_a_gitlink_ledger_is_an_integrity_error(a: Machine, b: Machine, remote: Path) -> None:
    task = opened(a, "a case")
    a.ok("case", "share", task)
    some_commit = git(remote, "rev-parse", "main", env=a.env)
    rewrite_replica(remote, task, a.env, "ledgers", f"160000 commit {some_commit}\tledgers")
    out = b.cli("case", "fetch", task)
    assert out.code == 4, out.stdout + out.stderr
    assert out.error_code == "integrity_error"
    assert "Traceback" not in out.stdout + out.stderr
    nothing_written(b, task)


def test_an_object_over_the_bound_is_an_integrity_error(
    a: Machine, b: Machine, remote: Path, tmp_path: Path
) -> None:
    task = opened(a, "a case")
    a.ok("case", "share", task)
    big = tmp_path / "big"
    with big.open("wb") as handle:
        handle.truncate(65 * 1024 * 1024)
    blob = git(remote, "hash-object", "-w", str(big), env=a.env)
    rewrite_replica(remote, task, a.env, "head.json", f"100644 blob {blob}\thead.json")
    out = b.cli("case", "fetch", task)
    assert out.code == 4, out.stdout + out.stderr
    assert out.error_code == "integrity_error"
    nothing_written(b, task)


def test_a_shorter_rewritten_history_is_a_fork_and_a_prefix_is_reported_behind(
    tmp_path: Path, a: Machine, b: Machine
) -> None:
    task = opened(a, "a case")
    a.ok("case", "share", task)
    c = copy_machine(tmp_path, a, "c")  # the same replica id and history so far
    older = tmp_path / "older.bundle"
    c.env["CORTEX_APPROVE_COMMANDS"] = "1"
    for claim in ("second", "third", "fourth"):
        a.ok("case", "evidence", "add", task, "--claim", claim)
    a.ok("case", "share", task)
    b.ok("case", "fetch", task)
    held = set(b.evidence(task))
    # An older export of the same history: nothing to import, and said so.
    c.ok("case", "bundle", task, "-o", str(older))
    behind = b.ok("case", "fetch", "--bundle", str(older))
    assert behind["cases"][0]["unchanged"] is True
    assert behind["cases"][0]["behind"], behind
    # A rewritten history, shorter than what b holds: kept as a fork, never read as unchanged.
    c.ok("case", "evidence", "add", task, "--claim", "rewritten")
    rewritten = tmp_path / "rewritten.bundle"
    c.ok("case", "bundle", task, "-o", str(rewritten))
    forked = b.ok("case", "fetch", "--bundle", str(rewritten))
    assert forked["cases"][0]["forks"], forked
    assert held < set(b.evidence(task))
    report = b.ok("case", "audit", task)
    assert "replica_forked" in {w["code"] for w in report["warnings"]}


def test_a_fetch_of_nothing_good_on_a_new_machine_mints_no_replica_file(
    a: Machine, b: Machine, remote: Path
) -> None:
    task = opened(a, "a case")
    a.ok("case", "share", task)
    rewrite_replica(
        remote,
        task,
        a.env,
        "head.json",
        "100644 blob "
        + git(
            remote, "hash-object", "-w", "--stdin", stdin=json.dumps({"x": 1}).encode(), env=a.env
        )
        + "\thead.json",
    )
    out = b.cli("case", "fetch", task)
    assert out.code == 4
    nothing_written(b, task)


@pytest.mark.usefixtures("repo_verifier")
def test_adopted_receipts_citing_evidence_the_case_lacks_are_refused(
    a: Machine, b: Machine
) -> None:
    from conftest import ready_to_verify
    from forge import rewrite_last_command

    from cortex.cases.digest import sha256_hex
    from cortex.cases.documents import Verification

    task = ready_to_verify(a.cli)
    (a.repo / "app.py").write_text("print('fixed')\n")
    a.ok("case", "verify", task)
    directory = case_dir(a, task)
    verification = decode((directory / "verification.json").read_bytes(), Verification)
    verification.receipts[0].evidence = ["ev_01J00000000000000000000000"]
    data = encode_pretty(verification)
    (directory / "verification.json").write_bytes(data)
    case = decode((directory / "case.json").read_bytes(), CaseFile)
    case.snapshots["verification"].sha256 = sha256_hex(data)
    rewrite_last_command(directory, case)
    assert a.cli("case", "audit", task).code == 4  # audit refuses it
    a.ok("case", "share", task)
    out = b.cli("case", "fetch", task)
    assert out.code == 4, out.stdout
    assert "not evidence of this case" in out.envelope["error"]["message"]
    nothing_written(b, task)


@pytest.fixture
def repo_verifier(a: Machine) -> None:
    (a.repo / "cortex.toml").write_text(
        '[share]\nenabled = true\n\n[verifiers.unit]\nargv = ["true"]\n'
    )
    a.git("commit", "-q", "-am", "a verifier")
    a.env["CORTEX_APPROVE_COMMANDS"] = "1"


def reuse_id(directory: Path, record_id: str) -> None:
    """Append an evidence line reusing `record_id`, earlier than everything, chain recomputed."""
    case = decode((directory / "case.json").read_bytes(), CaseFile)
    state = case.ledgers["evidence"]
    body = (directory / "evidence.jsonl").read_bytes()[: state.bytes]
    last = body.splitlines()[-1]
    record = decode(last, Evidence)
    record.id = record_id
    record.prev = ledger.line_hash(last)
    record.timestamp = "2000-01-01T00:00:00.000Z"
    record.claim = "a record that would stand in for the reviewer's"
    line = encode(record)
    (directory / "evidence.jsonl").write_bytes(body + line + b"\n")
    case.ledgers["evidence"] = msgspec.structs.replace(
        state, count=state.count + 1, bytes=len(body) + len(line) + 1, tip=ledger.line_hash(line)
    )
    (directory / "case.json").write_bytes(encode_pretty(case))


def test_a_record_reusing_an_id_the_case_holds_cannot_shadow_it(a: Machine, b: Machine) -> None:
    task = opened(a, "a case")
    a.ok("case", "share", task)
    b.ok("case", "fetch", task)
    mine = b.ok("case", "evidence", "add", task, "--claim", "the reviewer's own finding")
    theirs = mine["evidence"]["id"]
    b.ok("case", "share", task)
    a.ok("case", "fetch", task)
    reuse_id(case_dir(a, task), theirs)
    a.ok("case", "share", task)
    before = b.evidence(task)
    out = b.cli("case", "fetch", task)
    assert out.code == 4, out.stdout
    assert theirs in out.envelope["error"]["message"]
    assert b.evidence(task) == before
    shown = b.ok("case", "read-evidence", task, theirs)
    assert "the reviewer's own finding" in json.dumps(shown)
