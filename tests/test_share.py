"""Sharing cases through git refs (docs/design/sharing.md), with real git and bare remotes.

Each test builds "machines" (tests/share_kit.py): separate state roots, homes and clones of one
bare `file://` remote, and runs the real CLI on each.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import base_env, git
from share_kit import (
    Machine,
    case_objects,
    commit_code,
    copy_machine,
    make_machine,
    make_remote,
    reachable,
    remote_objects,
    remote_refs,
)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare remote whose main branch opts in to sharing."""
    return make_remote(tmp_path)


@pytest.fixture
def a(tmp_path: Path, remote: Path) -> Machine:
    """The agent's machine."""
    return make_machine(tmp_path, "a", remote)


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Machine:
    """The reviewer's machine."""
    return make_machine(tmp_path, "b", remote)


def opened(machine: Machine, goal: str = "Fix the login redirect") -> str:
    task: str = machine.ok("case", "open", goal)["taskId"]
    return task


def add(machine: Machine, task: str, claim: str, *extra: str, stdin: bytes = b"") -> str:
    record: str = machine.ok(
        "case", "evidence", "add", task, "--claim", claim, *extra, stdin=stdin
    )["evidence"]["id"]
    return record


def shared(machine: Machine, task: str) -> dict[str, Any]:
    data = machine.ok("case", "share", task)
    (case,) = data["cases"]
    assert case["pushed"] or case["unchanged"], data
    result: dict[str, Any] = case
    return result


def audit_ok(machine: Machine, task: str) -> dict[str, Any]:
    report: dict[str, Any] = machine.ok("case", "audit", task)
    assert report["ok"] is True, report
    return report


# The round trip -------------------------------------------------------------------------------


def test_a_shared_case_reads_the_same_on_another_machine(a: Machine, b: Machine) -> None:
    task = opened(a)
    first = add(a, task, "resolve_return_url falls back to /", "--file", "app.py", "--line", "1")
    raw = add(a, task, "suite fails", "--raw-file", "-", stdin=b"FAILED test_login\n")
    a.ok("case", "note", task, "return_to is dropped before the callback")
    result = shared(a, task)
    assert result["pushed"] is True
    assert result["ref"] == f"refs/cortex/cases/{task}"

    fetched = b.ok("case", "fetch", task)
    (case,) = fetched["cases"]
    assert case["taskId"] == task
    assert case["created"] is True

    assert b.evidence(task) == a.evidence(task)
    status = b.ok("case", "status", task)
    assert status["goal"] == "Fix the login redirect"
    assert status["status"] == a.ok("case", "status", task)["status"]
    replicas = status["replicas"]
    assert replicas is not None
    assert [r["replica"] for r in replicas["imported"]] == [
        a.ok("case", "share", task, "--dry-run")["replica"]
    ]
    show = b.ok("case", "show", task)
    foreign = [item for item in show["recent"]["items"] if item.get("replica")]
    assert {item["id"] for item in foreign} >= {first, raw}
    timeline = b.ok("case", "timeline", task, "--kind", "evidence")
    assert all(entry.get("replica") for entry in timeline["entries"])
    handoff = b.ok("case", "handoff", task)
    assert "Fix the login redirect" in handoff["markdown"]
    assert "Shared: this machine is" in handoff["markdown"]
    record = b.ok("case", "read-evidence", task, first)["evidence"]
    assert record["claim"] == "resolve_return_url falls back to /"
    ref = b.ok("case", "read-evidence", task, raw)["evidence"]["rawRef"]
    assert "FAILED test_login" in b.ok("case", "read-artifact", task, ref)["content"]
    audit_ok(b, task)
    audit_ok(a, task)


def test_a_fetched_case_counts_and_audits_every_replica(a: Machine, b: Machine) -> None:
    """Issue 29: on the machine that fetched, the header said `0 evidence` beside 3 in the list,
    and audit's report counted only this machine's records."""
    task = opened(a)
    for number in range(3):
        add(a, task, f"finding {number}")
    shared(a, task)
    b.ok("case", "fetch", task)
    b.ok("case", "note", task, "read on the reviewer's machine")
    counts = b.ok("case", "status", task)["counts"]
    assert counts["evidence"] == 4
    show = b.ok("case", "show", task)
    assert show["counts"] == show["recent"]["totals"] == counts
    text = " ".join(b.cli("case", "status", task, human=True).stdout.split())
    assert "4 evidence" in text
    report = audit_ok(b, task)
    assert report["records"]["evidence"] == 4
    (imported,) = report["replicas"]
    assert imported["records"]["evidence"] == 3
    assert imported["replica"] == a.ok("case", "share", task, "--dry-run")["replica"]
    shown = " ".join(b.cli("case", "audit", task, human=True).stdout.split())
    assert "1 imported replica" in shown


def test_sharing_is_opt_in_per_repository(tmp_path: Path) -> None:
    remote = make_remote(tmp_path, enabled=False)
    machine = make_machine(tmp_path, "a", remote)
    task = opened(machine)
    out = machine("case", "share", task)
    assert out.code == 5
    assert out.error_code == "refused"
    assert "[share]" in out.envelope["error"]["message"]
    assert remote_refs(remote, machine.env).keys() == {"refs/heads/main"}


def test_a_second_share_of_an_unchanged_case_writes_nothing(a: Machine, remote: Path) -> None:
    task = opened(a)
    add(a, task, "one")
    shared(a, task)
    before = remote_refs(remote, a.env)
    again = shared(a, task)
    assert again["unchanged"] is True
    assert again["objects"] == 0
    assert remote_refs(remote, a.env) == before


def test_an_incremental_share_writes_a_constant_number_of_objects(a: Machine) -> None:
    task = opened(a)
    for index in range(300):  # more than one sealed segment of every ledger that grows
        a.ok("case", "note", task, f"note {index}")
    first = shared(a, task)
    counts: list[int] = []
    for index in range(3):
        a.ok("case", "note", task, f"later {index}")
        counts.append(shared(a, task)["objects"])
    assert first["objects"] > 11
    # Two tails, case.json, head.json, six trees, one commit (docs/design/sharing.md).
    assert counts == [11, 11, 11], counts
    tip = a.git("rev-parse", f"refs/cortex/cases/{task}")
    new = a.git("rev-list", "--objects", tip, f"^{tip}~1").splitlines()
    assert len(new) == 11


def test_dry_run_prints_the_manifest_and_writes_nothing(a: Machine, remote: Path) -> None:
    task = opened(a)
    add(a, task, "kept")
    secret = add(a, task, "marked sensitive", "--sensitive")
    before = remote_refs(remote, a.env)
    objects = a.git("count-objects", "-v")
    data = a.ok("case", "share", task, "--dry-run")
    assert data["dryRun"] is True
    (case,) = data["cases"]
    manifest = case["manifest"]
    paths = {f["path"] for f in manifest["files"]}
    assert "meta.json" in paths
    assert any(p.endswith("/head.json") for p in paths)
    assert any(p.endswith("/ledgers/evidence/tail.jsonl") for p in paths)
    for entry in manifest["files"]:
        assert entry["size"] >= 0
        assert len(entry["sha256"]) == 64
        assert entry["new"] is True
    assert [w["id"] for w in manifest["withheld"]] == [secret]
    assert manifest["withheld"][0]["reason"] == "sensitive"
    assert manifest["totals"]["bytes"] == sum(f["size"] for f in manifest["files"])
    assert remote_refs(remote, a.env) == before
    assert a.git("count-objects", "-v") == objects
    assert a.git("for-each-ref", "refs/cortex/") == ""


# Nothing but the case leaves ------------------------------------------------------------------


def test_sharing_publishes_no_code_object(a: Machine, remote: Path) -> None:
    """The leak check: the remote gains only objects reachable from case refs."""
    unpushed = commit_code(a, "print('unpushed')\n")
    task = opened(a)  # records the unpushed HEAD, as text
    add(a, task, "the change is local only")
    assert a.ok("case", "status", task)["workspace"]["commitBefore"] == unpushed
    before = remote_objects(remote, a.env)
    shared(a, task)
    after = remote_objects(remote, a.env)
    case = reachable(remote, a.env, "refs/cortex/")
    assert after - before - case == set()
    assert unpushed not in after
    assert a.git("cat-file", "-t", unpushed) == "commit"
    # Case commits never have a code commit as a parent: the chain is an orphan.
    tip = git(remote, "rev-parse", f"refs/cortex/cases/{task}", env=a.env)
    log = git(remote, "rev-list", "--parents", tip, env=a.env).splitlines()
    assert all(len(line.split()) <= 3 for line in log)
    assert git(remote, "rev-list", "--max-parents=0", tip, env=a.env).count("\n") == 0


def test_no_path_of_the_sharing_machine_is_in_any_shared_object(a: Machine, remote: Path) -> None:
    task = opened(a)
    add(a, task, f"the log is at {a.repo}/build/log.txt")
    home = a.env["HOME"]
    add(
        a,
        task,
        "trace",
        "--raw-file",
        "-",
        stdin=f"{home}/.cache/x failed\n{a.repo}/app.py:1\n".encode(),
    )
    shared(a, task)
    data = case_objects(remote, a.env)
    for path in (str(a.repo), home, a.env["CORTEX_STATE_DIR"]):
        assert path.encode() not in data, path
    assert b"<workspace>/build/log.txt" in data


# Fetching never loses a local record ----------------------------------------------------------


def test_a_local_unshared_append_survives_every_fetch(a: Machine, b: Machine) -> None:
    task = opened(a)
    add(a, task, "shared first")
    shared(a, task)
    b.ok("case", "fetch", task)
    add(b, task, "from b")
    shared(b, task)
    mine = add(a, task, "not shared yet")
    later = add(b, task, "from b, in a bundle")
    bundle = b.root / "case.bundle"
    b.ok("case", "bundle", task, "-o", str(bundle))
    ref = a.git("rev-parse", f"refs/cortex/cases/{task}")
    for args in ([task], ["--all"], ["--bundle", str(bundle)]):
        a.ok("case", "fetch", *args)
        assert mine in a.evidence(task)
        assert a.git("rev-parse", f"refs/cortex/cases/{task}") == ref
    assert later in a.evidence(task)
    assert len(a.evidence(task)) == 4
    audit_ok(a, task)
    fetch_refspecs = a.git("config", "--get-all", "remote.origin.fetch")
    assert fetch_refspecs == "+refs/heads/*:refs/remotes/origin/*"


def test_a_fetch_with_nothing_new_writes_nothing(a: Machine, b: Machine) -> None:
    task = opened(a)
    shared(a, task)
    b.ok("case", "fetch", task)
    revision = b.ok("case", "status", task)["revision"]
    (case,) = b.ok("case", "fetch", task)["cases"]
    assert case["unchanged"] is True
    assert b.ok("case", "status", task)["revision"] == revision


# Two machines writing one case ----------------------------------------------------------------


def test_a_decision_asked_on_a_and_answered_on_b_resumes_the_case_on_a(
    a: Machine, b: Machine
) -> None:
    task = opened(a)
    add(a, task, "two ways to migrate")
    asked = a.ok(
        "case", "decision", "request", task, "--question", "Which migration?",
        "--option", "safe=Safe|slower", "--option", "fast=Fast|riskier", "--actor", "agent-1",
    )  # fmt: skip
    decision = asked["decision"]["id"]
    assert a.ok("case", "status", task)["status"] == "needs_human_decision"
    shared(a, task)

    b.ok("case", "fetch", task)
    assert b.ok("case", "status", task)["pendingDecision"]["id"] == decision
    b.ok("case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "alice")
    shared(b, task)

    (case,) = a.ok("case", "fetch", task)["cases"]
    assert case["adopted"] is not None
    assert case["conflicts"] == 0
    status = a.ok("case", "status", task)
    assert status["status"] == "investigating"
    assert status["pendingDecision"] is None
    decisions = a.ok("case", "decision", "list", task)["decisions"]
    assert decisions[0]["answer"] == "safe"
    assert decisions[0]["responder"] == "alice"
    # The answer's human_report evidence is B's record, visible on A.
    assert decisions[0]["evidenceId"] in a.evidence(task)
    add(a, task, "carrying on with the safe migration")  # A writes on the adopted state
    audit_ok(a, task)
    audit_ok(b, task)


def test_concurrent_changes_to_the_state_become_a_recorded_conflict(a: Machine, b: Machine) -> None:
    task = opened(a)
    evidence = add(a, task, "the bug is in app.py")
    plan = ["--hypothesis", "app.py :: a run shows it", "--support", f"1={evidence}"]
    plan += ["--uncertainty", "none", "--verify", "scope", "--file", "app.py"]
    plan += ["--boundary-reason", "there"]
    a.ok("case", "plan", task, *plan)
    shared(a, task)
    b.ok("case", "fetch", task)
    # Both re-plan without seeing the other: two changes of the state, neither knowing the other.
    a.ok("case", "plan", task, *plan, "--reason", "a sees more")
    b.ok("case", "plan", task, *plan, "--reason", "b sees more", "--file", "lib.py")
    shared(a, task)
    b_share = b.ok("case", "share", task)["cases"][0]
    assert b_share["pushed"]
    assert b_share["attempts"] == 2
    assert b_share["merged"]
    a.ok("case", "fetch", task)
    b.ok("case", "fetch", task)
    conflicts = [m.ok("case", "status", task)["replicas"]["conflicts"]["total"] for m in (a, b)]
    assert sum(conflicts) >= 1
    # Both plans stay readable: each is an evidence record of kind plan.
    plans = [
        e
        for e in b.ok("case", "timeline", task, "--kind", "evidence", "--limit", "100")["entries"]
        if e["evidenceKind"] == "plan"
    ]
    assert len(plans) == 3
    # And the same state is in force on both machines once each has seen the other.
    a.ok("case", "fetch", task)
    assert a.ok("case", "status", task)["plan"] == b.ok("case", "status", task)["plan"]
    codes = set()
    for machine in (a, b):
        codes |= {w["code"] for w in audit_ok(machine, task)["warnings"]}
    assert "replica_conflict" in codes


def test_a_copied_state_directory_is_a_fork_both_sides_kept(
    tmp_path: Path, a: Machine, b: Machine
) -> None:
    task = opened(a)
    add(a, task, "before the copy")
    shared(a, task)
    c = copy_machine(tmp_path, a, "c")  # same replica id, same history so far
    ours = add(a, task, "after the copy, on a")
    theirs = add(c, task, "after the copy, on c")
    shared(a, task)
    shared(c, task)
    a.ok("case", "fetch", task)
    b.ok("case", "fetch", task)
    for machine in (a, b):
        assert {ours, theirs} <= set(machine.evidence(task))
        assert len(machine.evidence(task)) == len(set(machine.evidence(task))) == 3
        report = audit_ok(machine, task)
        assert "replica_forked" in {w["code"] for w in report["warnings"]}


# Hosts that refuse custom refs ----------------------------------------------------------------

DECLINE = """#!/bin/sh
while read old new ref; do
  case "$ref" in refs/cortex/*) echo "custom refs are not accepted here" >&2; exit 1;; esac
done
exit 0
"""


def test_a_host_declining_case_refs_gives_a_typed_error_naming_the_bundle(
    a: Machine, b: Machine, remote: Path, tmp_path: Path
) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(DECLINE)
    hook.chmod(0o755)
    task = opened(a)
    add(a, task, "made on a runner whose host declines custom refs")
    out = a("case", "share", task)
    assert out.code == 5
    assert out.error_code == "remote_refused"
    assert "bundle" in out.envelope["error"]["message"]
    assert any("case bundle" in action["command"] for action in out.envelope["actions"])

    bundle = tmp_path / "case.bundle"
    made = a.ok("case", "bundle", task, "-o", str(bundle))
    assert made["verified"] is True
    assert bundle.is_file()
    (case,) = b.ok("case", "fetch", "--bundle", str(bundle))["cases"]
    assert case["taskId"] == task
    assert b.evidence(task) == a.evidence(task)
    audit_ok(b, task)


def test_a_tampered_bundle_is_refused(a: Machine, b: Machine, tmp_path: Path) -> None:
    task = opened(a)
    add(a, task, "an honest claim")
    bundle = tmp_path / "case.bundle"
    a.ok("case", "bundle", task, "-o", str(bundle))

    # One byte flipped inside the pack.
    flipped = tmp_path / "flipped.bundle"
    data = bytearray(bundle.read_bytes())
    data[-40] ^= 0x01
    flipped.write_bytes(bytes(data))
    out = b("case", "fetch", "--bundle", str(flipped))
    assert out.code == 4, out.stdout
    assert b.ok("case", "list")["total"] == 0

    # A bundle rebuilt around one edited line: git finds nothing wrong, the chain does.
    work = tmp_path / "edit"
    (tmp_path / "editor").mkdir()
    env = base_env(tmp_path / "editor")
    git(tmp_path, "init", "-q", str(work), env=env)
    git(
        work,
        "fetch",
        "-q",
        str(bundle),
        f"refs/cortex/cases/{task}:refs/cortex/cases/{task}",
        env=env,
    )
    git(work, "checkout", "-q", f"refs/cortex/cases/{task}", env=env)
    (tail,) = list(work.glob("replicas/*/ledgers/evidence/tail.jsonl"))
    tail.write_text(tail.read_text().replace("an honest claim", "a forged claim!"))
    git(work, "commit", "-qam", "edit", env=env)
    git(work, "update-ref", f"refs/cortex/cases/{task}", "HEAD", env=env)
    edited = tmp_path / "edited.bundle"
    git(work, "bundle", "create", "-q", str(edited), f"refs/cortex/cases/{task}", env=env)
    out = b("case", "fetch", "--bundle", str(edited))
    assert out.code == 4, out.stdout
    assert out.error_code == "integrity_error", out.stdout
    assert b.ok("case", "list")["total"] == 0


# The reviewer's path --------------------------------------------------------------------------


def test_the_reviewer_sees_the_assessment_the_agent_had(a: Machine, b: Machine) -> None:
    """A opens, verifies and shares; B fetches the PR's cases and shows the same assessment."""
    hook = a.ok("setup", "git-trailer")
    assert hook["written"] is True
    task = opened(a)
    evidence = add(a, task, "app.py prints the wrong greeting")
    a.ok(
        "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
        "--support", f"1={evidence}", "--uncertainty", "none", "--verify", "scope",
        "--file", "app.py", "--boundary-reason", "the bug lives here",
    )  # fmt: skip
    a.env["CORTEX_ACTOR"] = "agent-1"
    a.ok("case", "begin-change", task)
    commit_code(a, "print('hello, world')\n")  # the hook adds the trailer
    message = a.git("log", "-1", "--format=%B")
    assert f"Cortex-Case: {task}" in message
    verified = a.ok("case", "verify", task)
    assert verified["assessment"]["status"] == "verified", verified
    shared(a, task)
    a.git("push", "-q", "origin", "HEAD:refs/pull/1/head")
    agent_view = a.ok("case", "show", task)

    b.git("fetch", "-q", "origin", "refs/pull/1/head")
    b.git("checkout", "-q", "FETCH_HEAD")
    fetched = b.ok("case", "fetch", "--pr", "1")
    assert [c["taskId"] for c in fetched["cases"]] == [task]
    reviewer_view = b.ok("case", "show", task)
    assert reviewer_view["verification"]["status"] == "verified"
    for key in ("status", "plan", "verification", "goal"):
        assert reviewer_view[key] == agent_view[key], key


def test_setup_git_trailer_is_safe_to_rerun_and_never_replaces_a_foreign_hook(a: Machine) -> None:
    first = a.ok("setup", "git-trailer")
    assert first["written"] is True
    again = a.ok("setup", "git-trailer")
    assert again["written"] is False
    hook = Path(first["path"])
    hook.write_text("#!/bin/sh\necho mine\n")
    out = a("setup", "git-trailer")
    assert out.code == 5
    assert hook.read_text() == "#!/bin/sh\necho mine\n"


def test_the_trailer_names_the_case_holding_the_lease(a: Machine) -> None:
    task = opened(a)
    out = a("case", "trailer")
    assert out.code == 3
    evidence = add(a, task, "x")
    a.ok(
        "case", "plan", task, "--hypothesis", "h :: d", "--support", f"1={evidence}",
        "--uncertainty", "u", "--verify", "scope", "--file", "app.py", "--boundary-reason", "r",
    )  # fmt: skip
    a.ok("case", "begin-change", task, "--actor", "agent-1")
    assert a.ok("case", "trailer")["trailers"] == [f"Cortex-Case: {task}"]


# What reading commands do ---------------------------------------------------------------------

SPY = """#!/bin/sh
echo "$0 $*" >> {log}
exec {real} "$@"
"""


def test_reading_commands_never_push_or_fetch(a: Machine, b: Machine, tmp_path: Path) -> None:
    task = opened(a)
    add(a, task, "x")
    shared(a, task)
    b.ok("case", "fetch", task)
    log = tmp_path / "transport.log"
    for name in ("git-upload-pack", "git-receive-pack"):
        real = subprocess.run(
            ["git", "--exec-path"], capture_output=True, text=True, check=True
        ).stdout.strip()
        spy = tmp_path / f"spy-{name}"
        spy.write_text(SPY.format(log=log, real=f"{real}/{name}"))
        spy.chmod(0o755)
        key = "uploadpack" if "upload" in name else "receivepack"
        b.git("config", f"remote.origin.{key}", str(spy))
    reads = [
        ["case", "status", task], ["case", "show", task], ["case", "timeline", task],
        ["case", "handoff", task], ["case", "audit", task], ["case", "metrics", task],
        ["case", "list"], ["case", "sessions"], ["case", "decision", "list", task],
    ]  # fmt: skip
    for args in reads:
        b.ok(*args)
    assert not log.exists()
    b.ok("case", "fetch", task)
    assert log.exists()  # the spy works: a fetch does go through it


def test_an_imported_case_is_written_through_the_local_replica(a: Machine, b: Machine) -> None:
    task = opened(a)
    shared(a, task)
    b.ok("case", "fetch", task)
    mine = add(b, task, "written on b")
    shared(b, task)
    a.ok("case", "fetch", task)
    assert mine in a.evidence(task)
    records = json.dumps(a.ok("case", "read-evidence", task, mine)["evidence"])
    assert "written on b" in records


# Fencing, bounds and blobs ---------------------------------------------------------------------


def planned(machine: Machine, task: str) -> None:
    evidence = add(machine, task, "the bug is in app.py")
    machine.ok(
        "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
        "--support", f"1={evidence}", "--uncertainty", "none", "--verify", "scope",
        "--file", "app.py", "--boundary-reason", "the bug lives here",
    )  # fmt: skip


def test_the_replica_that_took_the_lease_last_owns_the_state(a: Machine, b: Machine) -> None:
    """A lower-fenced change (an older lease epoch) becomes a recorded conflict."""
    import time

    task = opened(a)
    planned(a, task)
    a.ok("case", "begin-change", task, "--actor", "agent-a", "--ttl", "1s")
    shared(a, task)
    b.ok("case", "fetch", task)
    time.sleep(1.2)  # agent-a's lease expires; agent-b takes it on b (epoch 2)
    b.ok("case", "begin-change", task, "--actor", "agent-b")
    shared(b, task)
    # Meanwhile a, still at epoch 1, changes the state: it asks a question.
    a.ok(
        "case", "decision", "request", task, "--question", "Ship it?",
        "--option", "y=Yes", "--option", "n=No", "--actor", "agent-a",
    )  # fmt: skip
    (case,) = a.ok("case", "fetch", task)["cases"]
    assert case["conflicts"] == 1
    status = a.ok("case", "status", task)
    assert status["lease"]["actor"] == "agent-b"
    assert status["status"] == "changing"
    conflict = status["replicas"]["conflicts"]["recent"][0]
    assert conflict["winner"]["fence"]["epoch"] == 2
    assert conflict["loser"]["fence"]["epoch"] == 1
    assert conflict["loser"]["phase"] == "needs_human_decision"
    out = a("case", "begin-change", task, "--actor", "agent-a")
    assert out.code == 6
    assert out.error_code == "lease_conflict"
    # The question a asked is still in the record: its audit line is in the union.
    operations = [
        e["operation"]
        for e in a.ok("case", "timeline", task, "--kind", "command", "--limit", "100")["entries"]
    ]
    assert "case.decision.request" in operations
    audit_ok(a, task)


def test_a_blob_over_the_bound_stays_home_and_says_so(a: Machine, b: Machine) -> None:
    task = opened(a)
    big = add(a, task, "a big log", "--raw-file", "-", stdin=b"x" * (1024 * 1024 + 10))
    ref = a.ok("case", "read-evidence", task, big)["evidence"]["rawRef"]
    manifest = a.ok("case", "share", task, "--dry-run")["cases"][0]["manifest"]
    (item,) = manifest["withheld"]
    assert item["what"] == "blob"
    assert item["reason"] == "size"
    assert item["size"] == 1024 * 1024 + 10
    shared(a, task)
    b.ok("case", "fetch", task)
    out = b("case", "read-artifact", task, ref)
    assert out.code == 3
    assert "withheld" in out.envelope["error"]["message"]
    audit_ok(b, task)


def test_a_case_over_the_share_bound_is_refused_with_the_manifest(a: Machine, remote: Path) -> None:
    import random

    task = opened(a)
    rng = random.Random(7)
    for index in range(17):
        data = bytes(rng.getrandbits(8) for _ in range(1000)) * 1000  # 1 MB, under the blob bound
        add(a, task, f"log {index}", "--raw-file", "-", stdin=data)
    out = a("case", "share", task)
    assert out.code == 4
    assert out.error_code == "invalid_input"
    manifest = out.envelope["data"]["manifest"]
    assert manifest["totals"]["bytes"] > manifest["limit"]
    assert remote_refs(remote, a.env).keys() == {"refs/heads/main"}


def test_a_directory_artifact_travels_whole(a: Machine, b: Machine, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "junit.xml").write_text(f"<testsuite name='{a.repo}'/>\n")
    (reports / "summary.txt").write_text("3 passed\n")
    task = opened(a)
    record = add(a, task, "junit reports", "--raw-dir", str(reports))
    ref = a.ok("case", "read-evidence", task, record)["evidence"]["rawRef"]
    shared(a, task)
    b.ok("case", "fetch", task)
    listing = b.ok("case", "read-artifact", task, ref)
    assert {f["path"] for f in listing["files"]} == {"junit.xml", "summary.txt"}
    junit = b.ok("case", "read-artifact", task, ref, "--path", "junit.xml")["content"]
    assert "<workspace>" in junit
    assert str(a.repo) not in junit
    audit_ok(b, task)


def test_a_completed_case_arrives_complete(a: Machine, b: Machine) -> None:
    task = opened(a)
    planned(a, task)
    a.ok("case", "begin-change", task, "--actor", "agent-1")
    commit_code(a, "print('fixed')\n")
    a.ok("case", "verify", task, "--actor", "agent-1")
    a.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    shared(a, task)
    b.ok("case", "fetch", task)
    status = b.ok("case", "status", task)
    assert status["status"] == "complete"
    summary = next(Path(b.env["CORTEX_STATE_DIR"]).glob(f"sessions/*/{task}/summary.md"))
    assert "fixed" in summary.read_text()
    audit_ok(b, task)


def test_arguments_are_checked_before_anything_runs(a: Machine, tmp_path: Path) -> None:
    task = opened(a)
    for args in (
        ["case", "share"],
        ["case", "share", task, "--all"],
        ["case", "share", task, "--remote", "file:///elsewhere.git"],
        ["case", "share", task, "--remote", "--upload-pack=evil"],
        ["case", "fetch"],
        ["case", "fetch", task, "--pr", "1"],
        ["case", "fetch", "--pr", "0"],
        ["case", "fetch", task, "--base", "main"],
        ["case", "bundle", task, "-o", str(Path(a.env["CORTEX_STATE_DIR"]) / "x.bundle")],
    ):
        out = a(*args)
        assert out.code in {4, 5}, (args, out.stdout)
    assert a.git("for-each-ref", "refs/cortex/") == ""
    assert not (tmp_path / "elsewhere.git").exists()
