"""Forged replicas against the merge gate (issue 27): real machines sharing one bare remote.

Each test was written to fail on the build it attacked; see tests/test_attack_gate.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Outcome, case_path, ready_to_verify
from forge import forge_receipts
from share_kit import SHARE_TOML, Machine, make_machine, make_remote

pytestmark = pytest.mark.process  # the verifiers are Python processes

CHECK = [sys.executable, "-c", "import sys; sys.exit('bad' in open('app.py').read())"]


def verdict(out: Outcome) -> dict[str, Any]:
    envelope = out.envelope
    assert envelope["data"] is not None, out.stdout + out.stderr
    data: dict[str, Any] = envelope["data"]
    assert out.code == (0 if data["verdict"] == "approve" else 5), out.stdout
    return data


def codes(data: dict[str, Any]) -> list[str]:
    return sorted(p["code"] for p in data["problems"])


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def agent_machine(tmp_path: Path, remote: Path, name: str = "agent") -> Machine:
    agent = make_machine(tmp_path, name, remote)
    unit = f"[verifiers.unit]\nargv = {json.dumps(CHECK)}\n"
    (agent.repo / "cortex.toml").write_text(SHARE_TOML + "\n" + unit)
    agent.git("commit", "-q", "-am", "configure verifiers")
    agent.git("push", "-q", "origin", "main")
    agent.env["CORTEX_APPROVE_COMMANDS"] = "1"
    agent.git("checkout", "-q", "-b", "feature")
    return agent


def forged_and_shared(agent: Machine) -> tuple[str, str]:
    """A case verified on good code, then the code broken and the receipts forged to name the
    broken head's tree (every digest recomputed), shared; (task, head)."""
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('fixed')\n")
    assert agent.ok("case", "verify", task)["assessment"]["status"] == "verified"
    agent.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    (agent.repo / "app.py").write_text("print('bad')\n")
    agent.git("commit", "-q", "-am", f"fix\n\nCortex-Case: {task}")
    agent.git("push", "-q", "origin", "feature")
    forge_receipts(case_path(agent.env, task), tree=agent.git("rev-parse", "HEAD^{tree}"))
    agent.ok("case", "share", task)
    return task, agent.git("rev-parse", "HEAD")


def reviewer(tmp_path: Path, remote: Path, head: str) -> Machine:
    ci = make_machine(tmp_path, "ci", remote)
    ci.git("fetch", "-q", "origin", "feature")
    ci.git("checkout", "-q", "--detach", head)
    ci.env["CORTEX_APPROVE_COMMANDS"] = "1"
    return ci


def replica_file(machine: Machine) -> Path:
    return Path(machine.env["CORTEX_STATE_DIR"]) / "replica.json"


def test_a_replica_published_under_the_reviewers_own_replica_id_is_not_local_proof(
    tmp_path: Path, remote: Path
) -> None:
    """The reviewer's replica id is public (it names its replicas in every case ref it shares).
    An attacker who publishes under it must not have their proof read as this machine's."""
    ci_id = "rep_01J0000000000000000000RC00"
    attacker = agent_machine(tmp_path, remote, "attacker")
    path = replica_file(attacker)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": ci_id, "key": "a" * 64}) + "\n")
    os.chmod(path, 0o600)
    task, head = forged_and_shared(attacker)
    ci = reviewer(tmp_path, remote, head)
    path = replica_file(ci)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": ci_id, "key": "c" * 64}) + "\n")
    os.chmod(path, 0o600)
    ci.ok("case", "fetch", task)
    data = verdict(ci.cli("review", "--base", "origin/main", "--head", head))
    provenance = data["cases"][0]["provenance"]
    assert provenance["origin"] != "local", provenance
    assert data["verdict"] != "approve"


def test_a_replica_whose_receipts_claim_the_bases_definition_but_ran_another_is_not_trusted(
    tmp_path: Path, remote: Path
) -> None:
    """The agent's global configuration defines `unit` as `true`; its receipts are forged to
    carry the base's definition digest, so the receipt comparison cannot see it. Only the policy
    stands between that replica and an approval: `remote` trusts it (trust.md says so), the
    default level does not, and a reproduction runs the base's argv and fails."""
    from forge import rewrite_last_command

    from cortex.cases.records import CaseFile, decode, encode_pretty
    from cortex.kernel.config import committed
    from cortex.verifiers.config import definition_digest

    agent = agent_machine(tmp_path, remote)
    committed_toml = (agent.repo / "cortex.toml").read_bytes()
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('bad')\n")
    # Verified with an uncommitted definition that passes anything, then put back.
    (agent.repo / "cortex.toml").write_text(SHARE_TOML + '[verifiers.unit]\nargv = ["true"]\n')
    assert agent.ok("case", "verify", task)["assessment"]["status"] == "verified"
    agent.ok("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1")
    (agent.repo / "cortex.toml").write_bytes(committed_toml)
    agent.git("commit", "-q", "-am", f"fix\n\nCortex-Case: {task}")
    agent.git("push", "-q", "origin", "feature")
    base = committed({"cortex.toml": committed_toml}, "base")
    digest = definition_digest("command:unit", base.verifiers)
    where = case_path(agent.env, task)
    forge_receipts(where, tree=agent.git("rev-parse", "HEAD^{tree}"))
    document = json.loads((where / "verification.json").read_text())
    for receipt in document["receipts"]:
        if receipt.get("verifierSha256"):
            receipt["verifierSha256"] = digest
    from cortex.cases.digest import sha256_hex
    from cortex.cases.documents import Verification

    data = encode_pretty(decode(json.dumps(document).encode(), Verification))
    (where / "verification.json").write_bytes(data)
    case = decode((where / "case.json").read_bytes(), CaseFile)
    case.snapshots["verification"].sha256 = sha256_hex(data)
    rewrite_last_command(where, case)
    assert agent.cli("case", "audit", task).code == 0
    agent.ok("case", "share", task)
    head = agent.git("rev-parse", "HEAD")
    ci = reviewer(tmp_path, remote, head)
    ci.ok("case", "fetch", task)
    default = verdict(ci.cli("review", "--base", "origin/main", "--head", head))
    assert codes(default) == ["untrusted_proof"]
    remote_level = verdict(
        ci.cli("review", "--base", "origin/main", "--head", head, "--accept", "remote")
    )
    assert remote_level["verdict"] == "approve"  # documented: `remote` trusts who can push
    reproduced = verdict(ci.cli("review", "--base", "origin/main", "--head", head, "--reproduce"))
    assert codes(reproduced) == ["failed"]
