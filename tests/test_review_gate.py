"""The merge gate approves only what it can check (issue 27; docs/design/report.md, the gate).

Real repositories, real verifier runs, real shares through a bare `file://` remote: integrity
before anything else, the provenance of each proof and the policy that decides which origins
count, the base branch's verifier definitions, `--reproduce`, and which cases a range is judged
by.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, case_path, configure_verifiers, git, ready_to_verify
from forge import forge_receipts
from share_kit import SHARE_TOML, Machine, make_machine, make_remote

pytestmark = pytest.mark.process  # its tests start cortex processes

CHECK = [sys.executable, "-c", "import sys; sys.exit('bad' in open('app.py').read())"]
"""The unit verifier: fails while app.py holds the word `bad`."""


def verdict(out: Outcome) -> dict[str, Any]:
    envelope = out.envelope
    assert envelope["data"] is not None, out.stdout + out.stderr
    data: dict[str, Any] = envelope["data"]
    if data["verdict"] == "approve":
        assert out.code == 0
    else:
        assert out.code == 5, out.stdout
        assert envelope["error"]["code"] == data["verdict"]
    return data


def codes(data: dict[str, Any]) -> list[str]:
    return sorted(p["code"] for p in data["problems"])


@pytest.fixture
def branch(repo: Path, env: dict[str, str]) -> Path:
    configure_verifiers(repo, env, {"unit": CHECK})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    return repo


def verified_and_committed(cli: Cli, repo: Path, env: dict[str, str], text: str = "") -> str:
    task = ready_to_verify(cli)
    (repo / "app.py").write_text(text or "print('fixed')\n")
    out = cli("case", "verify", task)
    assert out.data["assessment"]["status"] == "verified", out.stdout
    assert cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1").code == 0
    git(repo, "commit", "-q", "-am", f"fix\n\nCortex-Case: {task}", env=env)
    return task


# 1. Integrity first ----------------------------------------------------------------------------


def test_a_store_audit_calls_tampered_is_never_approved(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = verified_and_committed(cli, branch, env)
    assert verdict(cli("review", "--base", "main"))["verdict"] == "approve"
    evidence = case_path(env, task) / "evidence.jsonl"
    evidence.write_bytes(
        evidence.read_bytes().replace(b"the bug is in app.py", b"the bug is in lib.py")
    )
    assert cli("case", "audit", task).code == 4
    data = verdict(cli("review", "--base", "main"))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["integrity"]
    assert "audit" in data["problems"][0]["message"]
    # Reproducing does not rescue a tampered case: it is not judged further.
    again = verdict(cli("review", "--base", "main", "--reproduce"))
    assert codes(again) == ["integrity"]
    assert again["cases"][0]["reproduction"] is None


def test_a_forged_local_proof_passes_audit_but_not_reproduction(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = verified_and_committed(cli, branch, env)
    (branch / "app.py").write_text("print('bad')\n")
    git(branch, "commit", "-q", "-am", "later, never verified", env=env)
    tree = git(branch, "rev-parse", "HEAD^{tree}", env=env)
    forge_receipts(case_path(env, task), tree=tree)
    assert cli("case", "audit", task).code == 0  # the forgery recomputed every digest
    # At the `local` level the gate trusts this machine's records: documented, and approved.
    assert verdict(cli("review", "--base", "main"))["verdict"] == "approve"
    # Reproduced, the head commit's code fails the base branch's verifier.
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "request_changes"
    assert codes(data) == ["failed"]
    runs = data["cases"][0]["reproduction"]["runs"]
    assert [(r["requirement"], r["status"]) for r in runs] == [("command:unit", "failed")]


# 2. Provenance and policy ----------------------------------------------------------------------


def test_a_local_verify_is_local_proof_at_the_default_level(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    verified_and_committed(cli, branch, env)
    data = verdict(cli("review", "--base", "main"))
    assert data["verdict"] == "approve"
    assert data["policy"] == {"accept": "local", "from": "default"}
    provenance = data["cases"][0]["provenance"]
    assert provenance["origin"] == "local"
    assert provenance["reproduced"] is False
    md = cli("review", "--base", "main", "--format", "md", human=True)
    assert "| local |" in md.stdout
    bad = cli("review", "--base", "main", "--accept", "everything")
    assert bad.code == 4
    assert "--accept" in bad.envelope["error"]["message"]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def agent_machine(tmp_path: Path, remote: Path, toml: str = "") -> Machine:
    agent = make_machine(tmp_path, "agent", remote)
    unit = f"[verifiers.unit]\nargv = {json.dumps(CHECK)}\n"
    (agent.repo / "cortex.toml").write_text(SHARE_TOML + "\n" + unit + toml)
    agent.git("commit", "-q", "-am", "configure verifiers")
    agent.git("push", "-q", "origin", "main")
    agent.env["CORTEX_APPROVE_COMMANDS"] = "1"
    agent.git("checkout", "-q", "-b", "feature")
    return agent


def shared_case(agent: Machine) -> tuple[str, str]:
    """A case verified, completed and committed on the agent's branch, then shared; (task, head)."""
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('fixed')\n")
    assert agent.ok("case", "verify", task)["assessment"]["status"] == "verified"
    agent.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    agent.git("commit", "-q", "-am", f"fix\n\nCortex-Case: {task}")
    agent.git("push", "-q", "origin", "feature")
    agent.ok("case", "share", task)
    return task, agent.git("rev-parse", "HEAD")


def reviewer_of(tmp_path: Path, remote: Path, head: str, name: str = "ci") -> Machine:
    ci = make_machine(tmp_path, name, remote)
    ci.git("fetch", "-q", "origin", "feature")
    ci.git("checkout", "-q", "--detach", head)
    ci.env["CORTEX_APPROVE_COMMANDS"] = "1"
    return ci


def test_a_fetched_replica_is_remote_proof_which_the_default_level_does_not_accept(
    tmp_path: Path, remote: Path
) -> None:
    agent = agent_machine(tmp_path, remote)
    task, head = shared_case(agent)
    ci = reviewer_of(tmp_path, remote, head)
    ci.ok("case", "fetch", task)
    data = verdict(ci.cli("review", "--base", "origin/main", "--head", head))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["untrusted_proof"]
    provenance = data["cases"][0]["provenance"]
    assert provenance["origin"] == "remote"
    assert provenance["source"] == "remote:origin"
    assert provenance["replica"].startswith("rep_")
    assert "--accept remote" in data["problems"][0]["message"]
    accepted = verdict(
        ci.cli("review", "--base", "origin/main", "--head", head, "--accept", "remote")
    )
    assert accepted["verdict"] == "approve"
    assert accepted["policy"] == {"accept": "remote", "from": "flag"}
    reproduced = verdict(ci.cli("review", "--base", "origin/main", "--head", head, "--reproduce"))
    assert reproduced["verdict"] == "approve", reproduced
    assert reproduced["cases"][0]["provenance"]["reproduced"] is True
    assert reproduced["policy"]["accept"] == "reproduced"


def test_a_bundle_is_accepted_only_at_level_any_and_the_branch_cannot_lower_the_level(
    tmp_path: Path, remote: Path
) -> None:
    agent = agent_machine(tmp_path, remote, '\n[review]\naccept = "remote"\n')
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('fixed')\n")
    # The branch tries to lower its own gate in its cortex.toml.
    text = (agent.repo / "cortex.toml").read_text().replace('"remote"', '"any"')
    (agent.repo / "cortex.toml").write_text(text)
    agent.ok("case", "verify", task)
    agent.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    agent.git("commit", "-q", "-am", f"fix\n\nCortex-Case: {task}")
    agent.git("push", "-q", "origin", "feature")
    bundle = tmp_path / "case.bundle"
    agent.ok("case", "bundle", task, "-o", str(bundle))
    head = agent.git("rev-parse", "HEAD")
    ci = reviewer_of(tmp_path, remote, head)
    ci.ok("case", "fetch", "--bundle", str(bundle))
    data = verdict(ci.cli("review", "--base", "origin/main", "--head", head))
    assert data["policy"] == {"accept": "remote", "from": "base"}
    assert data["cases"][0]["provenance"]["origin"] == "bundle"
    assert "untrusted_proof" in codes(data)
    anything = verdict(ci.cli("review", "--base", "origin/main", "--head", head, "--accept", "any"))
    assert anything["verdict"] == "approve", anything


def test_a_forged_replica_is_approved_only_where_the_policy_trusts_the_remote(
    tmp_path: Path, remote: Path
) -> None:
    agent = agent_machine(tmp_path, remote)
    task, _ = shared_case(agent)
    # A later commit breaks the code; the agent's store is forged to claim it, then shared.
    (agent.repo / "app.py").write_text("print('bad')\n")
    agent.git("commit", "-q", "-am", "break it")
    agent.git("push", "-q", "origin", "feature")
    forge_receipts(case_path(agent.env, task), tree=agent.git("rev-parse", "HEAD^{tree}"))
    agent.ok("case", "share", task)
    head = agent.git("rev-parse", "HEAD")
    ci = reviewer_of(tmp_path, remote, head)
    ci.ok("case", "fetch", "--all")
    assert ci.cli("case", "audit", task).code == 0
    default = verdict(ci.cli("review", "--base", "origin/main", "--head", head))
    assert codes(default) == ["untrusted_proof"]
    reproduced = verdict(ci.cli("review", "--base", "origin/main", "--head", head, "--reproduce"))
    assert reproduced["verdict"] == "request_changes"
    assert codes(reproduced) == ["failed"]


# 3. Verifier definitions -----------------------------------------------------------------------


def test_a_verifier_redefined_on_the_branch_is_flagged_in_every_mode(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    (branch / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    git(branch, "commit", "-q", "-am", "a verifier that passes anything", env=env)
    task = verified_and_committed(cli, branch, env, text="print('bad')\n")
    receipt = json.loads((case_path(env, task) / "verification.json").read_text())["receipts"][0]
    assert len(receipt["verifierSha256"]) == 64
    data = verdict(cli("review", "--base", "main"))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["verifier_redefined"]
    assert [r["requirement"] for r in data["redefined"]] == ["command:unit"]
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "request_changes"
    assert codes(data) == ["failed"]
    assert [r["requirement"] for r in data["redefined"]] == ["command:unit"]
    assert any("command:unit" in w for w in data["warnings"])


def test_a_receipt_whose_definition_is_not_the_base_branchs_is_flagged(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    # The verifier is defined only in this machine's global configuration, never in the repo.
    config = Path(env["XDG_CONFIG_HOME"]) / "cortex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[verifiers.unit]\nargv = ["true"]\n')
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    verified_and_committed(cli, repo, env)
    data = verdict(cli("review", "--base", "main"))
    assert codes(data) == ["verifier_redefined"]
    assert "base" in data["problems"][0]["message"]


# 4. Reproduce ----------------------------------------------------------------------------------


def test_reproduce_runs_in_a_clean_checkout_and_writes_nothing(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = verified_and_committed(cli, branch, env)
    (branch / "app.py").write_text("print('bad, uncommitted')\n")  # the work tree is not judged
    store = case_path(env, task)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and p.suffix != ".lock"}
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "approve", data
    reproduction = data["cases"][0]["reproduction"]
    assert reproduction["ok"] is True
    assert [(r["requirement"], r["status"]) for r in reproduction["runs"]] == [
        ("command:unit", "passed")
    ]
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and p.suffix != ".lock"}
    assert after == before
    assert git(branch, "worktree", "list", "--porcelain", env=env).count("worktree ") == 1
    assert git(branch, "status", "--porcelain", env=env) == "M app.py"
    state = Path(env["CORTEX_STATE_DIR"])
    assert not list(state.glob("reproduce*/*"))


def test_reproduce_without_approval_does_not_approve(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    verified_and_committed(cli, branch, env)
    del env["CORTEX_APPROVE_COMMANDS"]
    data = verdict(Cli(env, branch)("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["not_reproduced"]


# 5. Which cases a range is judged by -----------------------------------------------------------


def test_other_open_cases_on_the_branch_are_seen_and_do_not_block(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    unrelated = [cli.open("an unrelated question"), cli.open("another one")]
    task = verified_and_committed(cli, branch, env)
    data = verdict(cli("review", "--base", "main"))
    assert data["verdict"] == "approve", data
    assert [c["taskId"] for c in data["cases"]] == [task]
    assert sorted(s["taskId"] for s in data["seen"]) == sorted(unrelated)
    md = cli("review", "--base", "main", "--format", "md", human=True)
    assert unrelated[0] in md.stdout


def test_an_adopted_state_reusing_a_local_batch_id_is_not_local_proof(
    tmp_path: Path, remote: Path
) -> None:
    """B verified locally (batch X, on the old code). A adopts B's state, then forges it: batch
    X now names the head tree, every digest recomputed, shared with a higher fence. B fetches
    and adopts it: the batch id is still one B's own ledger committed, the content is A's."""
    b = agent_machine(tmp_path, remote)  # B, the machine that verifies first
    task = ready_to_verify(b.cli)
    (b.repo / "app.py").write_text("print('fixed')\n")
    assert b.ok("case", "verify", task)["assessment"]["status"] == "verified"
    b.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    b.git("commit", "-q", "-am", f"fix\n\nCortex-Case: {task}")
    b.ok("case", "share", task)
    a = make_machine(tmp_path, "a", remote)
    a.ok("case", "fetch", task)  # its import commit fences a's state above b's
    (b.repo / "app.py").write_text("print('bad')\n")
    b.git("commit", "-q", "-am", "never verified")
    head_tree = b.git("rev-parse", "HEAD^{tree}")
    forge_receipts(case_path(a.env, task), tree=head_tree)
    assert a.cli("case", "audit", task).code == 0
    a.ok("case", "share", task)
    fetched = b.ok("case", "fetch", task)
    assert fetched["cases"][0]["adopted"], fetched
    data = verdict(b.cli("review", "--base", "main"))
    assert data["cases"][0]["provenance"]["origin"] == "remote", data["cases"][0]
    assert "untrusted_proof" in codes(data)
