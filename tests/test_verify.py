"""Verification: one batch of receipts bound to the code it ran on, and what it may prove.

Every test drives the real CLI in-process against a real git repository, with real verifier
processes (docs/design/verification.md). The scenario suite (`TestNothingComesOutVerified`)
builds situations in which no proof exists and checks that no surface (verify, status,
complete) shows the case as verified. "Nothing written" is checked on the durable state of the
store: every file except the `.lock` files, which a refused writer may rewrite.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    case_path,
    configure_verifiers,
    git,
    ready_to_verify,
)
from verify_kit import (
    AWS_KEY,
    GITHUB_TOKEN,
    approve,
    assert_not_verified,
    assert_refused,
    complete,
    durable_state,
    edit,
    raw_blob,
    receipts_by,
    steps,
    verdict_of_status,
    write_config,
)

from cortex.workspace.capture import capture

CRITERION = "c1=the login returns to checkout"


# Helpers -------------------------------------------------------------------------------------


def verification_doc(env: dict[str, str], task: str) -> dict[str, Any] | None:
    """verification.json as stored (None when absent)."""
    path = case_path(env, task) / "verification.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def phases(env: dict[str, str], task: str) -> list[tuple[str | None, str]]:
    """The phase ledger as (from, to) pairs."""
    path = case_path(env, task) / "phases.jsonl"
    lines = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return [(line["from"], line["to"]) for line in lines]


def head(repo: Path, env: dict[str, str]) -> str:
    """HEAD of `repo`."""
    return git(repo, "rev-parse", "HEAD", env=env)


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> None:
    """`command:unit` runs `true`, approved by the launcher's environment."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    approve(env)


# A. Happy paths ------------------------------------------------------------------------------


@pytest.mark.usefixtures("unit")
class TestHappyPath:
    def verified(self, cli: Cli, repo: Path) -> tuple[str, dict[str, Any]]:
        task = ready_to_verify(cli, verify=("command:unit", "scope"), criteria=("c1=statement",))
        edit(repo)
        out = cli(
            "case", "verify", task, "--claim", "c1=statement", "--contract", "c1=command:unit"
        )
        data: dict[str, Any] = out.data
        return task, data

    def test_a_passing_command_verifies_with_bound_receipts(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, data = self.verified(cli, repo)
        assert data["assessment"]["status"] == "verified"
        assert data["status"] == "verifying"
        live = capture(str(repo), env)
        assert live.bound
        assert live.head == head(repo, env)
        batch = data["batch"]
        assert batch["binding"] == "bound"
        assert batch["reasons"] == []
        assert (batch["revision"], batch["dirtyDigest"]) == (live.head, live.digest)
        receipts = receipts_by(data)
        assert set(receipts) == {"command:unit", "scope", "claim:c1"}
        for receipt in receipts.values():
            assert receipt["status"] == "passed"
            assert receipt["binding"] == "bound"
            assert receipt["revision"] == live.head
            assert receipt["dirtyDigest"] == live.digest
            assert receipt["batchId"] == batch["id"]
        assert receipts["claim:c1"]["claim"] == "statement"
        assert receipts["claim:c1"]["contract"] == "command:unit"
        # The stored document says the same as the envelope.
        stored = verification_doc(env, task)
        assert stored is not None
        assert [b["id"] for b in stored["batches"]] == [batch["id"]]
        assert {r["id"] for r in stored["receipts"]} == {r["id"] for r in data["receipts"]}

    def test_status_and_phase_follow_the_batch(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, _ = self.verified(cli, repo)
        status = cli("case", "status", task).data
        assert status["status"] == "verifying"
        assert status["verification"]["status"] == "verified"
        assert status["verification"]["stale"] == []
        assert phases(env, task)[-1] == ("changing", "verifying")

    def test_evidence_and_raw_output_are_recorded(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, data = self.verified(cli, repo)
        receipt = receipts_by(data)["command:unit"]
        assert receipt["artifact"] is not None
        (evidence_id,) = receipt["evidence"]
        record = cli("case", "read-evidence", task, evidence_id).data["evidence"]
        assert record["source"]["tool"] == "cortex-verify:command:unit"
        assert record["claim"].startswith("[passed] unit:")
        assert record["rawRef"] == receipt["artifact"]
        blob = raw_blob(env, task, record["rawRef"])
        assert blob.startswith(b"$ true\nexit 0")
        assert record["rawSha256"] == __import__("hashlib").sha256(blob).hexdigest()
        # The named claim rests on the very same run.
        assert receipts_by(data)["claim:c1"]["evidence"] == [evidence_id]
        scope_evidence = receipts_by(data)["scope"]["evidence"]
        scope_record = cli("case", "read-evidence", task, scope_evidence[0]).data["evidence"]
        assert scope_record["claim"].startswith("[passed] scope:")

    def test_complete_writes_the_summary_and_releases_the_lease(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, data = self.verified(cli, repo)
        done = complete(cli, task)
        assert done.data["status"] == "complete"
        assert done.data["acknowledged"] is None
        assert done.data["assessment"]["status"] == "verified"
        # Where it is, whole (issue 29: `summary in summary.md` did not say where that was).
        assert done.data["summary"] == str(case_path(env, task) / "summary.md")
        summary = (case_path(env, task) / "summary.md").read_text()
        assert "## Outcome\n\n> fixed it\n" in summary
        assert "## Verification: verified" in summary
        assert data["batch"]["id"] in summary
        assert "Acknowledged" not in summary
        status = cli("case", "status", task).data
        assert status["status"] == "complete"
        assert status["lease"]["state"] == "released"
        assert phases(env, task)[-2:] == [("verifying", "persisting"), ("persisting", "complete")]

    def test_attest_is_an_in_toto_statement_of_the_bound_batch(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, data = self.verified(cli, repo)
        attested = cli("case", "attest", task).data
        assert attested["current"] is True
        assert attested["assessment"] == "verified"
        assert attested["batchId"] == data["batch"]["id"]
        statement = attested["statement"]
        assert statement["_type"] == "https://in-toto.io/Statement/v1"
        assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
        commit, tree, worktree = statement["subject"]
        assert commit["digest"] == {"gitCommit": head(repo, env)}
        assert tree == {"name": "tree", "digest": {"gitTree": data["batch"]["tree"]}}
        live = capture(str(repo), env)
        assert live.digest is not None
        assert worktree["digest"] == {"sha256": live.digest.removeprefix("sha256:")}
        predicate = statement["predicate"]
        assert predicate["result"] == "PASSED"
        assert sorted(predicate["passedTests"]) == ["claim:c1", "command:unit", "scope"]
        assert predicate["failedTests"] == predicate["warnedTests"] == []
        assert predicate["configuration"][0]["name"] == f"case://{task}/plan.json"
        # Attesting is read-only: an edit afterwards makes it not current, not different.
        edit(repo, "print('later')\n")
        later = cli("case", "attest", task).data
        assert later["current"] is False
        assert later["assessment"] != "verified"
        assert later["statement"] == statement


class TestExitStatus:
    """Issue 29: verify exited 0 on a `failed` batch. A script can rely on its exit status like
    pytest's or `git diff --exit-code`'s: 0 only when the batch verified the case, 2 when it was
    recorded but did not (failed, partial or unverified); refusals keep their own codes."""

    def test_zero_only_when_verified_two_when_recorded_but_not(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": ["false"]})
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        failed = cli("case", "verify", task)
        assert failed.code == 2, failed.stdout
        envelope = failed.envelope
        assert envelope["ok"] is True  # the batch was recorded
        assert envelope["data"]["assessment"]["status"] == "failed"
        text = cli("case", "verify", task, human=True)
        assert text.code == 2
        assert "assessment  failed" in text.stdout
        configure_verifiers(repo, env, {"unit": ["true"]})
        verified = cli("case", "verify", task)
        assert verified.code == 0, verified.stdout
        assert verified.envelope["data"]["assessment"]["status"] == "verified"

    def test_a_refusal_keeps_its_own_code(self, cli: Cli, repo: Path, env: dict[str, str]) -> None:
        configure_verifiers(repo, env, {"unit": ["true"]})
        approve(env)
        task = ready_to_verify(cli)
        refused = cli("case", "verify", task)  # nothing changed: a change task needs --no-op
        assert refused.code == 5
        assert refused.envelope["ok"] is False


# B. Nothing comes out verified ---------------------------------------------------------------


class TestNothingComesOutVerified:
    @pytest.mark.usefixtures("unit")
    def test_1_edit_after_verify_makes_the_receipts_stale(self, cli: Cli, repo: Path) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        first = cli("case", "verify", task)
        assert first.data["assessment"]["status"] == "verified"
        edit(repo, "print('edited after verify')\n")
        verification = cli("case", "status", task).data["verification"]
        assert verification["status"] == "unverified"
        (receipt,) = verification["receipts"]
        assert receipt["stale"] is True
        assert receipt["proof"] is False
        assert verification["stale"] == [receipt["id"]]
        assert any("stale" in reason for reason in verification["reasons"])
        assert_not_verified(cli, task)
        # Attest still describes the old batch, but says it is not current.
        assert cli("case", "attest", task).data["current"] is False

    @pytest.mark.process
    def test_2_a_verifier_that_edits_the_tree_unbinds_the_batch(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": steps("append", "app.py", "#x")})
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        data = out.data
        assert data["batch"]["binding"] == "unbound"
        assert any("work tree" in reason for reason in data["batch"]["reasons"])
        receipt = receipts_by(data)["command:unit"]
        assert receipt["status"] == "inconclusive"
        assert receipt["binding"] == "unbound"
        assert any("passed on code that was not stable" in note for note in receipt["notes"])
        assert any("work tree" in reason for reason in data["assessment"]["reasons"])
        assert data["assessment"]["unbound"] == [receipt["id"]]
        assert_not_verified(cli, task, out)
        assert_refused(cli("case", "attest", task), 5)

    def test_3a_a_required_verifier_that_is_not_configured_refuses_the_batch(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        log = repo.parent / "ran.log"
        configure_verifiers(repo, env, {"unit": steps("log", str(log))})
        approve(env)
        task = ready_to_verify(cli, verify=("command:unit", "command:other"))
        edit(repo)
        before = durable_state(env)
        out = cli("case", "verify", task)
        assert_refused(out, 4)
        assert "'other'" in out.envelope["error"]["message"]
        assert durable_state(env) == before
        assert not log.exists(), "no verifier may run when one of them cannot"
        assert verdict_of_status(cli, task) is None

    def test_3b_a_claim_resting_on_a_blocked_verifier_is_not_proven(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        missing = str(repo.parent / "no-such-program")
        configure_verifiers(repo, env, {"unit": ["true"], "other": [missing]})
        approve(env)
        task = ready_to_verify(cli, verify=("command:unit", "command:other"))
        edit(repo)
        out = cli(
            "case",
            "verify",
            task,
            "--claim",
            "k1=the other check holds",
            "--contract",
            "k1=command:other",
        )
        data = out.data
        receipts = receipts_by(data)
        assert receipts["command:unit"]["status"] == "passed"
        assert receipts["command:other"]["status"] == "blocked"
        assert "could not start" in receipts["command:other"]["claim"]
        assert receipts["claim:k1"]["status"] in {"blocked", "not_run"}
        assessment = data["assessment"]
        assert assessment["status"] == "partial"
        assert assessment["missingRequirements"] == ["command:other"]
        assert assessment["unprovenClaims"] == ["k1"]
        assert_not_verified(cli, task, out)

    @pytest.mark.process
    def test_4_a_timeout_blocks_and_kills_the_whole_process_group(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        pidfile = repo.parent / "grandchild.pid"
        write_config(
            repo,
            env,
            {
                "slow": {
                    "argv": steps("grandchild", str(pidfile), "::", "sleep", "30"),
                    "timeout": 1,
                }
            },
        )
        approve(env)
        task = ready_to_verify(cli, verify=("command:slow",))
        edit(repo)
        started = time.monotonic()
        out = cli("case", "verify", task)
        elapsed = time.monotonic() - started
        assert elapsed < 6, f"verify took {elapsed:.1f} s with a 1 s timeout"
        receipt = receipts_by(out.data)["command:slow"]
        assert receipt["status"] == "blocked"
        assert "killed after 1 s" in receipt["claim"]
        assert any("timed out" in note for note in receipt["notes"])
        grandchild = int(pidfile.read_text())
        assert wait_dead(grandchild), f"the grandchild sleep {grandchild} outlived the timeout"
        assert_not_verified(cli, task, out)

    def test_5_an_unapproved_command_is_blocked_and_never_runs(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        marker = repo.parent / "ran.marker"
        configure_verifiers(repo, env, {"unit": steps("append", str(marker), "ran")})
        assert "CORTEX_APPROVE_COMMANDS" not in env
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["command:unit"]
        assert receipt["status"] == "blocked"
        assert "not approved" in receipt["claim"]
        assert any("cortex case trust unit" in note for note in receipt["notes"])
        assert receipt["artifact"] is None
        assert not marker.exists()
        assert_not_verified(cli, task, out)

    @pytest.mark.parametrize("value", ["0", "no", "", "maybe"])
    def test_5b_only_a_yes_in_the_variable_approves(
        self, cli: Cli, repo: Path, env: dict[str, str], value: str
    ) -> None:
        marker = repo.parent / "ran.marker"
        configure_verifiers(repo, env, {"unit": steps("append", str(marker), "ran")})
        env["CORTEX_APPROVE_COMMANDS"] = value
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        assert receipts_by(out.data)["command:unit"]["status"] == "blocked"
        assert not marker.exists()

    @pytest.mark.process
    def test_6a_a_lease_that_expires_during_the_run_writes_nothing(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": steps("sleep", "2.5")})
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        renewed = cli("case", "lease", "renew", task, "--actor", "agent-1", "--ttl", "1s")
        assert renewed.code == 0, renewed.stdout
        before = durable_state(env)
        started = time.monotonic()
        out = cli("case", "verify", task)
        # The refusal came at the commit, after the verifier ran (not at the start).
        assert time.monotonic() - started >= 2.5
        assert_refused(out, 6)
        assert out.error_code == "lease_conflict"
        assert durable_state(env) == before
        assert verification_doc(env, task) is None
        assert verdict_of_status(cli, task) is None

    @pytest.mark.process
    def test_6b_a_lease_taken_by_another_actor_during_the_run_writes_nothing(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        taskfile = repo.parent / "task.id"
        release = ["case", "lease", "release", "{task}", "--actor", "agent-1"]
        take = ["case", "begin-change", "{task}", "--actor", "agent-2"]
        argv = steps("cortex", str(taskfile), *release, "::", "cortex", str(taskfile), *take)
        configure_verifiers(repo, env, {"unit": argv})
        approve(env)
        task = ready_to_verify(cli)
        taskfile.write_text(task)
        edit(repo)
        out = cli("case", "verify", task)
        assert_refused(out, 6)
        assert out.error_code == "lease_conflict"
        assert verification_doc(env, task) is None
        status = cli("case", "status", task).data
        assert status["lease"]["actor"] == "agent-2"
        assert status["verification"] is None
        assert status["status"] == "changing"

    @pytest.mark.process
    def test_6c_a_lease_released_and_retaken_by_the_holder_never_verifies(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        taskfile = repo.parent / "task.id"
        release = ["case", "lease", "release", "{task}", "--actor", "agent-1"]
        take = ["case", "begin-change", "{task}", "--actor", "agent-1"]
        argv = steps("cortex", str(taskfile), *release, "::", "cortex", str(taskfile), *take)
        configure_verifiers(repo, env, {"unit": argv})
        approve(env)
        task = ready_to_verify(cli)
        taskfile.write_text(task)
        edit(repo)
        out = cli("case", "verify", task)
        if out.code == 0:
            # Written, then only as an unbound batch that proves nothing.
            assert out.data["batch"]["binding"] == "unbound"
            assert any("lease" in reason for reason in out.data["batch"]["reasons"])
        else:
            assert_refused(out, 6)
        assert verdict_of_status(cli, task) != "verified"

    @pytest.mark.process
    def test_7_a_newer_unbound_batch_masks_an_older_pass(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        # The verifier writes a note to the case while it runs, but only once the flag exists:
        # the second batch is unbound although the code is the very code the first one passed.
        flag = repo.parent / "flag"
        taskfile = repo.parent / "task.id"
        argv = steps("if-exists", str(flag), "::", "cortex", str(taskfile), "case", "note")
        argv += ["{task}", "written while verifying"]
        configure_verifiers(repo, env, {"unit": argv})
        approve(env)
        task = ready_to_verify(cli)
        taskfile.write_text(task)
        edit(repo)
        first = cli("case", "verify", task)
        assert first.data["assessment"]["status"] == "verified"
        flag.write_text("on")
        second = cli("case", "verify", task)
        data = second.data
        assert data["batch"]["binding"] == "unbound"
        assert any("case changed during the run" in r for r in data["batch"]["reasons"])
        assert data["batch"]["dirtyDigest"] == first.data["batch"]["dirtyDigest"]
        assert_not_verified(cli, task, second)

    @pytest.mark.process
    def test_7b_a_newer_unbound_batch_after_an_edit_masks_an_older_pass(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        flag = repo.parent / "flag"
        configure_verifiers(
            repo, env, {"unit": steps("if-exists", str(flag), "::", "append", "app.py", "#x")}
        )
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        assert cli("case", "verify", task).data["assessment"]["status"] == "verified"
        flag.write_text("on")
        second = cli("case", "verify", task)
        assert second.data["batch"]["binding"] == "unbound"
        assert_not_verified(cli, task, second)

    @pytest.mark.usefixtures("unit")
    def test_8_a_criterion_needs_its_exact_statement(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, criteria=(CRITERION,))
        edit(repo)
        before = durable_state(env)
        changed = cli(
            "case",
            "verify",
            task,
            "--claim",
            CRITERION + "!",
            "--contract",
            "c1=command:unit",
        )
        envelope = assert_refused(changed, 5)
        assert "exactly" in envelope["error"]["message"]
        assert durable_state(env) == before
        exact = cli("case", "verify", task, "--claim", CRITERION, "--contract", "c1=command:unit")
        assert exact.data["assessment"]["status"] == "verified"

    @pytest.mark.usefixtures("unit")
    def test_8b_a_missing_criterion_blocks_completion_whatever_is_acknowledged(
        self, cli: Cli, repo: Path
    ) -> None:
        task = ready_to_verify(cli, criteria=(CRITERION,))
        edit(repo)
        out = cli("case", "verify", task)
        assessment = out.data["assessment"]
        assert assessment["status"] in {"partial", "unverified"}
        assert assessment["missingCriteria"] == ["c1"]
        assert_not_verified(cli, task, out)
        for flag in ("--verification-not-possible", "--accept-failed"):
            refused = complete(cli, task, flag, "we could not prove it")
            envelope = assert_refused(refused, 5)
            assert "c1" in envelope["error"]["message"]
        assert cli("case", "status", task).data["status"] == "verifying"

    @pytest.mark.usefixtures("unit")
    def test_8c_a_claim_on_another_id_does_not_prove_the_criterion(
        self, cli: Cli, repo: Path
    ) -> None:
        task = ready_to_verify(cli, criteria=(CRITERION,))
        edit(repo)
        statement = CRITERION.split("=", 1)[1]
        out = cli(
            "case", "verify", task, "--claim", f"c2={statement}", "--contract", "c2=command:unit"
        )
        assert out.data["assessment"]["missingCriteria"] == ["c1"]
        assert_not_verified(cli, task, out)

    def test_9_a_failed_command_needs_accept_failed(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": ["false"]})
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        assert receipts_by(out.data)["command:unit"]["status"] == "failed"
        assessment = out.data["assessment"]
        assert assessment["status"] == "failed"
        assert assessment["failed"] == ["command:unit"]
        assert_not_verified(cli, task, out)
        refused = complete(cli, task, "--verification-not-possible", "it cannot be run")
        assert_refused(refused, 5)
        done = complete(cli, task, "--accept-failed", "the flaky suite is tracked in #12")
        assert done.data["status"] == "complete"
        assert "the flaky suite is tracked in #12" in done.data["acknowledged"]
        summary = (case_path(env, task) / "summary.md").read_text()
        assert "## Verification: failed" in summary
        acknowledged = "Acknowledged:\n\n> accepted failed verification: the flaky suite is tracked"
        assert acknowledged in summary

    def test_10_a_workspace_that_is_not_a_git_repository_proves_nothing(
        self, env: dict[str, str], tmp_path: Path
    ) -> None:
        plain = tmp_path / "plain"
        plain.mkdir()
        (plain / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
        approve(env)
        cli = Cli(env, plain)
        task = ready_to_verify(cli, mode="investigate")
        out = cli("case", "verify", task)
        data = out.data
        assert data["batch"]["binding"] == "unbound"
        assert data["assessment"]["status"] == "unverified"
        assert receipts_by(data)["command:unit"]["status"] == "inconclusive"
        assert any("not a git repository" in r for r in data["assessment"]["reasons"])
        assert_not_verified(cli, task, out)
        done = cli(
            "case", "complete", task, "--outcome", "looked", "--verification-not-possible", "no git"
        )
        assert done.data["status"] == "complete"
        summary = (case_path(env, task) / "summary.md").read_text()
        assert "verification not possible (unverified): no git" in summary


def wait_dead(pid: int, timeout: float = 3.0) -> bool:
    """Whether `pid` is gone (or a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


# C. Bad input --------------------------------------------------------------------------------


BAD_CLAIMS: list[tuple[str, tuple[str, ...]]] = [
    ("claim without contract", ("--claim", "k1=it works")),
    ("contract without claim", ("--contract", "k1=command:unit")),
    ("contract for an unknown claim", ("--claim", "k1=x", "--contract", "k2=command:unit")),
    ("contract not in the plan", ("--claim", "k1=x", "--contract", "k1=command:other")),
    ("contract on scope not in the plan", ("--claim", "k1=x", "--contract", "k1=scope")),
    (
        "contract with a shell tail",
        ("--claim", "k1=x", "--contract", "k1=command:unit; touch pwned"),
    ),
    ("empty contract", ("--claim", "k1=x", "--contract", "k1=")),
    ("empty selector", ("--claim", "k1=x", "--contract", "k1=command:unit#")),
    ("control character in selector", ("--claim", "k1=x", "--contract", "k1=command:unit#a\x01b")),
    ("contract over 1 KiB", ("--claim", "k1=x", "--contract", "k1=command:unit#" + "t" * 1024)),
    ("AWS key in contract", ("--claim", "k1=x", "--contract", f"k1=command:unit#{AWS_KEY}")),
    (
        "GitHub token in contract",
        ("--claim", "k1=x", "--contract", f"k1=command:unit#{GITHUB_TOKEN}"),
    ),
    ("claim id with a space", ("--claim", "k 1=x", "--contract", "k 1=command:unit")),
    ("claim id ../x", ("--claim", "../x=x", "--contract", "../x=command:unit")),
    ("claim id with a slash", ("--claim", "a/b=x", "--contract", "a/b=command:unit")),
    ("claim id non-ASCII", ("--claim", "ké=x", "--contract", "ké=command:unit")),
    ("empty claim id", ("--claim", "=x", "--contract", "=command:unit")),
    (
        "claim id of 129 bytes",
        ("--claim", "a" * 129 + "=x", "--contract", "a" * 129 + "=command:unit"),
    ),
    ("claim without =", ("--claim", "k1", "--contract", "k1=command:unit")),
    ("empty statement", ("--claim", "k1=", "--contract", "k1=command:unit")),
    ("blank statement", ("--claim", "k1=   ", "--contract", "k1=command:unit")),
    ("statement over 4 KiB", ("--claim", "k1=" + "s" * 4097, "--contract", "k1=command:unit")),
    (
        "statement over 4 KiB in bytes",
        ("--claim", "k1=" + "é" * 2049, "--contract", "k1=command:unit"),
    ),
    (
        "statement with a terminal escape",
        ("--claim", "k1=ok\x1b[2J", "--contract", "k1=command:unit"),
    ),
    ("claim given twice", ("--claim", "k1=x", "--claim", "k1=y", "--contract", "k1=command:unit")),
    (
        "contract given twice",
        ("--claim", "k1=x", "--contract", "k1=command:unit", "--contract", "k1=command:unit"),
    ),
    ("secret in a malformed claim id", ("--claim", f"{GITHUB_TOKEN} x=y")),
]


class TestBadInput:
    @pytest.fixture
    def logged(self, repo: Path, env: dict[str, str]) -> Path:
        """`command:unit` appends its argv to a log outside the repository."""
        log = repo.parent / "ran.log"
        configure_verifiers(repo, env, {"unit": steps("log", str(log))})
        approve(env)
        return log

    @pytest.mark.parametrize(("name", "args"), BAD_CLAIMS, ids=[name for name, _ in BAD_CLAIMS])
    def test_bad_claims_are_refused_before_anything_runs(
        self,
        cli: Cli,
        *,
        repo: Path,
        env: dict[str, str],
        logged: Path,
        tmp_path: Path,
        name: str,
        args: tuple[str, ...],
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        before = durable_state(env)
        out = cli("case", "verify", task, *args)
        assert_refused(out, 4)
        assert out.error_code == "invalid_input", name
        assert durable_state(env) == before
        assert not logged.exists()
        for secret in (AWS_KEY, GITHUB_TOKEN):
            assert secret not in out.stdout + out.stderr
        assert not list(tmp_path.rglob("pwned"))

    @pytest.mark.process
    def test_a_claim_id_of_128_bytes_is_accepted(self, cli: Cli, repo: Path, logged: Path) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        claim = "a" * 128
        out = cli(
            "case", "verify", task, "--claim", f"{claim}=x", "--contract", f"{claim}=command:unit"
        )
        assert receipts_by(out.data)[f"claim:{claim}"]["status"] == "passed"
        assert logged.exists()

    @pytest.mark.process
    def test_injection_through_claims_is_stored_as_text_and_runs_nothing(
        self, cli: Cli, repo: Path, env: dict[str, str], logged: Path, tmp_path: Path
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        statement = "$(touch pwned); rm -rf ./no-such-dir && touch pwned `touch pwned`"
        selector = "$(touch pwned)"
        out = cli(
            "case",
            "verify",
            task,
            "--claim",
            f"k1={statement}",
            "--contract",
            "k1=command:unit",
            "--claim",
            "k2=selected",
            "--contract",
            f"k2=command:unit#{selector}",
        )
        receipts = receipts_by(out.data)
        assert receipts["claim:k1"]["claim"] == statement
        assert receipts["claim:k1"]["status"] == "passed"
        assert receipts["claim:k2"]["contract"] == f"command:unit#{selector}"
        assert receipts["claim:k2"]["status"] == "not_run"
        assert out.data["assessment"]["unprovenClaims"] == ["k2"]
        stored = verification_doc(env, task)
        assert stored is not None
        assert statement in [r["claim"] for r in stored["receipts"]]
        # The configured argv ran once, exactly as configured, and nothing else.
        runs = [json.loads(line) for line in logged.read_text().splitlines()]
        assert runs == [["log", str(logged)]]
        assert not list(tmp_path.rglob("pwned"))
        assert not (Path.cwd() / "pwned").exists()
        assert git(repo, "status", "--porcelain", env=env) == "M app.py"

    def test_an_unknown_verifier_kind_is_refused_at_verify_time(
        self, cli: Cli, repo: Path, env: dict[str, str], logged: Path
    ) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "nosuch"))
        edit(repo)
        before = durable_state(env)
        out = cli("case", "verify", task)
        envelope = assert_refused(out, 4)
        assert "unknown verifier 'nosuch'" in envelope["error"]["message"]
        assert durable_state(env) == before
        assert not logged.exists()

    def test_verify_in_the_wrong_phase_is_refused_with_actions(
        self, cli: Cli, env: dict[str, str], logged: Path
    ) -> None:
        task = cli.open("Fix the login redirect")
        cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data  # noqa: B018
        assert cli("case", "status", task).data["status"] == "investigating"
        before = durable_state(env)
        out = cli("case", "verify", task)
        envelope = assert_refused(out, 5)
        assert envelope["actions"], envelope
        assert any("plan" in action["command"] for action in envelope["actions"])
        assert durable_state(env) == before
        assert not logged.exists()

    @pytest.mark.parametrize("how", ["flag", "environment"])
    def test_verify_by_a_non_holder_is_a_lease_conflict(
        self, cli: Cli, repo: Path, env: dict[str, str], logged: Path, how: str
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        before = durable_state(env)
        if how == "flag":
            out = cli("case", "verify", task, "--actor", "agent-2")
        else:
            out = Cli({**env, "CORTEX_ACTOR": "agent-2"}, repo)("case", "verify", task)
        assert_refused(out, 6)
        assert out.error_code == "lease_conflict"
        assert durable_state(env) == before
        assert not logged.exists()

    def test_verify_after_the_lease_was_released_is_a_lease_conflict(
        self, cli: Cli, repo: Path, env: dict[str, str], logged: Path
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        assert cli("case", "lease", "release", task, "--actor", "agent-1").code == 0
        before = durable_state(env)
        out = cli("case", "verify", task)
        assert_refused(out, 6)
        assert durable_state(env) == before
        assert not logged.exists()

    @pytest.mark.process
    @pytest.mark.parametrize(
        "second",
        [("k1=another statement", "k1=command:unit"), ("k1=first statement", "k1=command:unit#t")],
        ids=["statement", "contract"],
    )
    def test_a_claim_id_keeps_its_meaning_for_the_case(
        self,
        cli: Cli,
        repo: Path,
        env: dict[str, str],
        logged: Path,
        second: tuple[str, str],
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        first = cli(
            "case", "verify", task, "--claim", "k1=first statement", "--contract", "k1=command:unit"
        )
        assert first.code == 0, first.stdout
        runs = logged.read_text()
        before = durable_state(env)
        out = cli("case", "verify", task, "--claim", second[0], "--contract", second[1])
        envelope = assert_refused(out, 5)
        assert "already used" in envelope["error"]["message"]
        assert durable_state(env) == before
        assert logged.read_text() == runs
        # The same claim again is fine.
        again = cli(
            "case", "verify", task, "--claim", "k1=first statement", "--contract", "k1=command:unit"
        )
        assert again.data["assessment"]["status"] == "verified"


class TestBatchesOverTime:
    @pytest.mark.process
    @pytest.mark.usefixtures("unit")
    def test_renewing_the_lease_during_the_run_keeps_the_batch_bound(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        taskfile = repo.parent / "task.id"
        renew = ["case", "lease", "renew", "{task}", "--actor", "agent-1", "--ttl", "10m"]
        configure_verifiers(repo, env, {"unit": steps("cortex", str(taskfile), *renew)})
        task = ready_to_verify(cli)
        taskfile.write_text(task)
        edit(repo)
        out = cli("case", "verify", task)
        assert out.data["batch"]["binding"] == "bound", out.data["batch"]["reasons"]
        assert out.data["assessment"]["status"] == "verified"

    @pytest.mark.usefixtures("unit")
    def test_only_the_newest_64_batches_are_kept(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        first = cli("case", "verify", task).data["batch"]["id"]
        for _ in range(64):
            assert cli("case", "verify", task).code == 0
        stored = verification_doc(env, task)
        assert stored is not None
        assert len(stored["batches"]) == 64
        assert first not in {b["id"] for b in stored["batches"]}
        assert {r["batchId"] for r in stored["receipts"]} == {b["id"] for b in stored["batches"]}
        assert verdict_of_status(cli, task) == "verified"

    @pytest.mark.usefixtures("unit")
    def test_a_claim_id_keeps_its_meaning_after_64_batches(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        claim = ("--claim", "k1=the first meaning", "--contract", "k1=command:unit")
        assert cli("case", "verify", task, *claim).code == 0
        for _ in range(64):
            assert cli("case", "verify", task).code == 0
        before = durable_state(env)
        out = cli(
            "case", "verify", task, "--claim", "k1=another meaning", "--contract", "k1=command:unit"
        )
        assert_refused(out, 5)
        assert durable_state(env) == before
