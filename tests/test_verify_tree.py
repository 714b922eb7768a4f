"""Proof that survives a commit: receipts bound to the working tree's git tree id (issue 14).

The trial a new user runs: verify, `git commit -am`, and the case is still `verified`; amend
the commit with one more byte and it is stale; take the byte back and it is current again. Every
surface says why (status, show, handoff, attest) through the one assessment, and a receipt
written before tree ids keeps the old HEAD-and-digest rule. Real git, in-process CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, git, ready_to_verify
from verify_kit import approve, complete, edit, verdict_of_status

from cortex.cases.documents import Batch, Receipt, Verification
from cortex.kernel.proof.assessment import assess, currency, is_current
from cortex.workspace.capture import Capture


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> None:
    """`command:unit` runs `true`, approved by the launcher's environment."""
    from conftest import configure_verifiers

    configure_verifiers(repo, env, {"unit": ["true"]})
    approve(env)


def head(repo: Path, env: dict[str, str]) -> str:
    return git(repo, "rev-parse", "HEAD", env=env)


def head_tree(repo: Path, env: dict[str, str]) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}", env=env)


def verified(cli: Cli, repo: Path) -> tuple[str, dict[str, Any]]:
    task = ready_to_verify(cli)
    edit(repo)
    out = cli("case", "verify", task)
    assert out.data["assessment"]["status"] == "verified", out.stdout
    assert out.data["batch"]["binding"] == "bound"
    return task, out.data


def status_verification(cli: Cli, task: str) -> dict[str, Any]:
    data = cli("case", "status", task).data["verification"]
    assert data is not None
    return dict(data)


@pytest.mark.usefixtures("unit")
class TestTheTrial:
    def test_commit_keeps_proof_amend_takes_it_revert_gives_it_back(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, data = verified(cli, repo)
        verified_at = head(repo, env)
        tree = data["batch"]["tree"]
        assert tree is not None
        assert data["batch"]["headTree"] == head_tree(repo, env) != tree
        assert {r["tree"] for r in data["receipts"]} == {tree}

        git(repo, "commit", "-q", "-am", "fix", env=env)
        assert head_tree(repo, env) == tree
        assert verdict_of_status(cli, task) == "verified"
        facts = status_verification(cli, task)["currency"]
        assert facts["rule"] == "tree"
        assert facts["current"] is True
        assert facts["committed"] is True
        assert facts["uncommitted"] is True
        assert facts["verifiedHead"] == verified_at
        assert facts["head"] == head(repo, env)
        assert facts["summary"] == (
            f"verified at {verified_at[:7]} with uncommitted changes; "
            f"committed unchanged as {head(repo, env)[:7]}"
        )

        with (repo / "app.py").open("a") as handle:
            handle.write("#")
        git(repo, "commit", "-q", "-a", "--amend", "--no-edit", env=env)
        assert verdict_of_status(cli, task) != "verified"
        stale = status_verification(cli, task)
        assert stale["stale"]
        assert stale["currency"]["current"] is False
        assert "the code changed since" in stale["currency"]["summary"]

        edit(repo)  # the byte taken back, then committed again
        assert verdict_of_status(cli, task) == "verified"  # the work tree alone is current
        git(repo, "commit", "-q", "-a", "--amend", "--no-edit", env=env)
        assert head_tree(repo, env) == tree
        assert verdict_of_status(cli, task) == "verified"
        out = complete(cli, task)
        assert out.code == 0, out.stdout
        assert out.data["assessment"]["status"] == "verified"

    def test_status_and_show_say_why_in_text(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, _ = verified(cli, repo)
        verified_at = head(repo, env)[:7]
        before = " ".join(cli("case", "status", task, human=True).stdout.split())
        assert f"verified at {verified_at} with uncommitted changes; unchanged since" in before
        git(repo, "commit", "-q", "-am", "fix", env=env)
        committed = head(repo, env)[:7]
        line = f"committed unchanged as {committed}"
        for command in ("status", "show"):
            text = cli("case", command, task, human=True).stdout
            assert line in " ".join(text.split()), text
        handoff = cli("case", "handoff", task).data
        assert line in handoff["markdown"]

    def test_attest_names_the_tree_git_committed(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        """The Statement validates with the in-toto bindings; gitTree == HEAD^{tree}."""
        statement_pb2 = _in_toto()
        task, _ = verified(cli, repo)
        git(repo, "commit", "-q", "-am", "fix", env=env)
        attested = cli("case", "attest", task).data
        assert attested["current"] is True
        assert attested["assessment"] == "verified"
        statement = attested["statement"]
        _validate(statement_pb2, statement)
        trees = [s["digest"]["gitTree"] for s in statement["subject"] if "gitTree" in s["digest"]]
        assert trees == [head_tree(repo, env)]
        # ... and after one more byte it is not current, by the same rule as status.
        with (repo / "app.py").open("a") as handle:
            handle.write("#")
        assert cli("case", "attest", task).data["current"] is False

    def test_staging_the_verified_code_keeps_the_proof(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        """`git add` changes the index (and the digest), not the code: still current."""
        task, _ = verified(cli, repo)
        git(repo, "add", "app.py", env=env)
        assert verdict_of_status(cli, task) == "verified"
        (repo / "app.py").write_text("print('edited after staging')\n")
        assert verdict_of_status(cli, task) != "verified"

    def test_a_commit_on_a_clean_verify_says_unchanged(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, _ = verified(cli, repo)
        git(repo, "commit", "-q", "-am", "fix", env=env)
        again = cli("case", "verify", task, "--no-op")
        assert again.data["assessment"]["status"] == "verified", again.stdout
        assert again.data["batch"]["tree"] == again.data["batch"]["headTree"]
        facts = status_verification(cli, task)["currency"]
        assert facts["uncommitted"] is False
        assert facts["summary"] == f"verified at {head(repo, env)[:7]}; unchanged since"


def _in_toto() -> Any:
    """The in-toto project's own Python bindings (the dev extra installs them)."""
    if os.environ.get("CI"):
        from in_toto_attestation.v1 import statement_pb2

        return statement_pb2
    return pytest.importorskip("in_toto_attestation.v1.statement_pb2")


def _validate(statement_pb2: Any, statement: dict[str, Any]) -> None:
    from google.protobuf import json_format
    from in_toto_attestation.v1.statement import Statement

    proto = json_format.Parse(json.dumps(statement), statement_pb2.Statement())
    Statement.copy_from_pb(proto).validate()
    from in_toto_attestation.predicates.test_result.v0 import (
        test_result_pb2,
    )

    json_format.Parse(json.dumps(statement["predicate"]), test_result_pb2.TestResult())


# -- the rule itself, on made-up captures ------------------------------------------------------

HEAD_A, HEAD_B = "a" * 40, "b" * 40
TREE_X, TREE_Y = "1" * 40, "2" * 40


def live(head: str, digest: str, tree: str | None, head_tree: str | None = None) -> Capture:
    return Capture(head=head, digest=digest, tree=tree, head_tree=head_tree)


def test_a_receipt_with_a_tree_is_current_by_the_tree_alone() -> None:
    assert is_current(HEAD_A, "sha256:d", TREE_X, live(HEAD_B, "sha256:other", TREE_X))
    assert not is_current(HEAD_A, "sha256:d", TREE_X, live(HEAD_A, "sha256:d", TREE_Y))
    assert not is_current(HEAD_A, "sha256:d", TREE_X, live(HEAD_A, "sha256:d", None))
    assert not is_current(HEAD_A, "sha256:d", TREE_X, Capture(reason="not a repository"))


def test_an_older_receipt_keeps_head_and_digest() -> None:
    assert is_current(HEAD_A, "sha256:d", None, live(HEAD_A, "sha256:d", TREE_X))
    assert not is_current(HEAD_A, "sha256:d", None, live(HEAD_B, "sha256:d", TREE_X))
    assert not is_current(HEAD_A, "sha256:d", None, live(HEAD_A, "sha256:e", TREE_X))


def _doc(tree: str | None) -> Verification:
    batch = Batch(
        id="vb_1",
        actor="a",
        started_at="t",
        finished_at="t",
        binding="bound",
        revision=HEAD_A,
        dirty_digest="sha256:d",
        case_revision=1,
        tree=tree,
    )
    receipt = Receipt(
        id="vr_1",
        batch_id="vb_1",
        purpose="marker",
        claim="c",
        actor="a",
        tool="cortex",
        status="passed",
        revision=HEAD_A,
        dirty_digest="sha256:d",
        binding="bound",
        timestamp="t",
        tree=tree,
    )
    return Verification(batches=[batch], receipts=[receipt])


def test_a_verification_file_without_trees_still_decodes() -> None:
    import msgspec

    old = msgspec.json.encode(_doc(None))
    stripped = json.loads(old)
    for record in stripped["batches"] + stripped["receipts"]:
        record.pop("tree", None)
        record.pop("headTree", None)
    decoded = msgspec.json.decode(json.dumps(stripped).encode(), type=Verification)
    assert decoded.receipts[0].tree is None
    assert decoded.batches[0].tree is None


def test_currency_sentences() -> None:
    batch = _doc(TREE_X).batches[0]
    batch.head_tree = TREE_Y
    committed = currency(batch, live(HEAD_B, "sha256:z", TREE_X, TREE_X))
    assert (
        committed.summary
        == "verified at aaaaaaa with uncommitted changes; committed unchanged as bbbbbbb"
    )
    moved = currency(batch, live(HEAD_B, "sha256:z", TREE_X, TREE_Y))
    assert moved.current
    assert not moved.committed
    assert "HEAD is now bbbbbbb" in moved.summary
    changed = currency(batch, live(HEAD_A, "sha256:z", TREE_Y, TREE_Y))
    assert not changed.current
    assert "the code changed since" in changed.summary
    unnamed = currency(batch, Capture(head=HEAD_A, digest="sha256:d", tree_reason="why not"))
    assert not unnamed.current
    assert unnamed.summary.endswith("the code cannot be compared now: why not")
    older = _doc(None).batches[0]
    assert currency(older, live(HEAD_A, "sha256:d", TREE_X)).rule == "head_and_digest"
    assert currency(older, live(HEAD_A, "sha256:d", TREE_X)).current


def test_assess_uses_the_tree(tmp_path: Path) -> None:
    from cortex.cases.records import CaseFile

    del tmp_path
    case = _case()
    assert isinstance(case, CaseFile)
    doc = _doc(TREE_X)
    assert assess(case, doc, live(HEAD_B, "sha256:z", TREE_X)).status == "verified"
    assert assess(case, doc, live(HEAD_A, "sha256:d", TREE_Y)).status == "unverified"
    older = _doc(None)
    assert assess(case, older, live(HEAD_B, "sha256:d", TREE_X)).status == "unverified"
    assert assess(case, older, live(HEAD_A, "sha256:d", TREE_Y)).status == "verified"


def _case() -> Any:
    import msgspec

    from cortex.cases.records import CaseFile

    return msgspec.convert(
        {
            "schemaVersion": 1,
            "id": "task_01J00000000000000000000000",
            "revision": 1,
            "goal": "g",
            "mode": "investigate",
            "risk": "low",
            "status": "verifying",
            "actor": "a",
            "createdAt": "t",
            "updatedAt": "t",
            "workspace": {"kind": "git", "root": "/r", "repository": "r"},
        },
        type=CaseFile,
    )
