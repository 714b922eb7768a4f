"""`assess`, the one judge of what is proven, as a pure function of records and a capture.

The end-to-end tests (test_verify.py, test_verify_tree.py, test_status_binding.py) reach it
through the CLI and real git; these build the records directly, so that every branch of the
verdict, every list and every reason is pinned, and a mutation run of
cortex/kernel/proof/assessment.py takes seconds a mutant (docs/testing.md). A test written for a
mutant that survived names it in its docstring: `assessment.py` line, `before -> after`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cortex.cases.documents import Batch, Receipt, Verification
from cortex.cases.records import CaseFile
from cortex.kernel.proof.assessment import Assessment, assess, currency, is_current
from cortex.workspace.capture import Capture

HEAD_A, HEAD_B = "a" * 40, "b" * 40
TREE_X, TREE_Y = "1" * 40, "2" * 40
PLAN = "c" * 64


def case(
    required: list[str] | None = None,
    criteria: dict[str, str] | None = None,
    plan: str | None = None,
) -> CaseFile:
    """A change case that requires `required` and accepts on `criteria` (id -> statement)."""
    data: dict[str, Any] = {
        "id": "task_01J00000000000000000000000",
        "revision": 1,
        "goal": "g",
        "status": "verifying",
        "actor": "a",
        "createdAt": "t",
        "updatedAt": "t",
        "workspace": {"kind": "git", "root": "/r", "repository": "r"},
        "verificationRequired": required or [],
        "acceptanceCriteria": [
            {"id": key, "statement": text} for key, text in (criteria or {}).items()
        ],
    }
    if plan is not None:
        data["snapshots"] = {"plan": {"revision": 1, "sha256": plan}}
    return msgspec.convert(data, type=CaseFile)


def batch(
    bid: str = "vb_1",
    *,
    binding: str = "bound",
    reasons: list[str] | None = None,
    tree: str | None = TREE_X,
    plan: str | None = None,
    head_tree: str | None = None,
) -> Batch:
    return msgspec.convert(
        {
            "id": bid,
            "actor": "a",
            "startedAt": "t",
            "finishedAt": "t",
            "binding": binding,
            "reasons": reasons or [],
            "revision": HEAD_A,
            "dirtyDigest": "sha256:d",
            "caseRevision": 1,
            "planSha256": plan,
            "tree": tree,
            "headTree": head_tree,
        },
        type=Batch,
    )


def receipt(
    rid: str,
    *,
    purpose: str = "verifier_run",
    requirement: str | None = None,
    claim_id: str | None = None,
    claim: str = "c",
    status: str = "passed",
    binding: str = "bound",
    tree: str | None = TREE_X,
    batch_id: str = "vb_1",
    **more: Any,
) -> Receipt:
    return msgspec.convert(
        more
        | {
            "id": rid,
            "batchId": batch_id,
            "purpose": purpose,
            "requirement": requirement,
            "claimId": claim_id,
            "claim": claim,
            "actor": "a",
            "tool": "cortex",
            "status": status,
            "revision": HEAD_A,
            "dirtyDigest": "sha256:d",
            "binding": binding,
            "timestamp": "t",
            "tree": tree,
        },
        type=Receipt,
    )


def doc(*receipts: Receipt, batches: list[Batch] | None = None) -> Verification:
    return Verification(batches=batches or [batch()], receipts=list(receipts))


LIVE = Capture(head=HEAD_A, digest="sha256:d", tree=TREE_X, head_tree=TREE_X)
"""The workspace as it was verified."""


def plain(result: Assessment) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(result)
    return data


def view(rid: str, *, proof: bool = True, stale: bool = False, **fields: Any) -> dict[str, Any]:
    """A receipt view as `plain` gives it, for a passed, bound verifier run by default."""
    out: dict[str, Any] = {
        "id": rid,
        "purpose": "verifier_run",
        "requirement": None,
        "claimId": None,
        "status": "passed",
        "binding": "bound",
        "proof": proof,
        "stale": stale,
        "failing": [],
        "failingTotal": 0,
        "acknowledged": None,
        "contract": None,  # a claim's contract (issue 29); none on these receipts
    }
    out.update(fields)
    return out


class TestNothingVerified:
    def test_no_verification_file(self) -> None:
        """Kills `assess` 6, 8, 11 (the no-verification reason dropped or changed, issue 21)
        and 13-15 (its lists)."""
        result = assess(case(["command:unit"], {"AC1": "works"}), None, LIVE)
        assert plain(result) == {
            "status": "unverified",
            "batchId": None,
            "binding": None,
            "live": None,
            "receipts": [],
            "missingRequirements": ["command:unit"],
            "unprovenClaims": [],
            "missingCriteria": ["AC1"],
            "failed": [],
            "stale": [],
            "unbound": [],
            "reasons": ["nothing has been verified yet"],
            "currency": None,
            "acknowledged": [],
        }

    def test_a_file_without_batches(self) -> None:
        """Kills `not verification.batches` -> `verification.batches` (line ~163)."""
        result = assess(case(["scope"]), Verification(), LIVE)
        assert result.status == "unverified"
        assert result.reasons == ["nothing has been verified yet"]
        assert result.missing_requirements == ["scope"]


class TestVerdict:
    def test_verified(self) -> None:
        result = assess(
            case(["command:unit"], {"AC1": "works"}),
            doc(
                receipt("vr_1", requirement="command:unit"),
                receipt("vr_2", purpose="named_claim", claim_id="AC1", claim="works"),
            ),
            LIVE,
        )
        assert plain(result) == {
            "status": "verified",
            "batchId": "vb_1",
            "binding": "bound",
            "live": None,
            "receipts": [
                view("vr_1", requirement="command:unit"),
                view("vr_2", purpose="named_claim", claimId="AC1"),
            ],
            "missingRequirements": [],
            "unprovenClaims": [],
            "missingCriteria": [],
            "failed": [],
            "stale": [],
            "unbound": [],
            "reasons": [],
            "currency": {
                "rule": "tree",
                "current": True,
                "verifiedHead": HEAD_A,
                "verifiedTree": TREE_X,
                "uncommitted": None,
                "head": HEAD_A,
                "tree": TREE_X,
                "committed": False,
                "summary": f"verified at {HEAD_A[:7]}; unchanged since",
            },
            "acknowledged": [],
        }

    def test_only_a_missing_requirement_is_partial(self) -> None:
        """Kills `_verdict` 4: `A or B or C` -> `A and B or C` (issue 21).

        A required verifier never ran, every claim is proven, no criterion is missing, and
        another receipt passed: the verdict is `partial`, never `verified`.
        """
        result = assess(
            case(["command:unit", "scope"]), doc(receipt("vr_1", requirement="scope")), LIVE
        )
        assert result.missing_requirements == ["command:unit"]
        assert result.unproven_claims == []
        assert result.missing_criteria == []
        assert result.status == "partial"
        assert result.reasons == ["required verifiers without a current pass: command:unit"]

    def test_only_an_unproven_claim_is_partial(self) -> None:
        """Kills `A or B or C` -> `A or B and C` in `_verdict`."""
        result = assess(
            case(),
            doc(
                receipt("vr_1"),
                receipt("vr_2", purpose="named_claim", claim_id="C2", status="not_run"),
            ),
            LIVE,
        )
        assert result.unproven_claims == ["C2"]
        assert result.status == "partial"
        assert result.reasons == ["claims without a current pass: C2"]

    def test_only_a_missing_criterion_is_partial(self) -> None:
        """Kills `A or B or C` -> `A or (B and C)` in `_verdict`, and pins the criterion reason."""
        result = assess(case(criteria={"AC1": "works"}), doc(receipt("vr_1")), LIVE)
        assert result.missing_criteria == ["AC1"]
        assert result.status == "partial"
        assert result.reasons == [
            "acceptance criteria without a current, exact, passing claim: AC1"
        ]

    def test_missing_without_a_pass_is_unverified(self) -> None:
        """Kills `"partial" if passing else "unverified"` with the branches swapped or changed."""
        result = assess(
            case(["scope"]), doc(receipt("vr_1", requirement="scope", status="not_run")), LIVE
        )
        assert result.status == "unverified"
        assert result.missing_requirements == ["scope"]

    def test_nothing_missing_and_nothing_passed_is_unverified(self) -> None:
        """Kills `"verified" if passing else "unverified"` with `unverified` changed."""
        result = assess(case(), doc(receipt("vr_1", status="inconclusive")), LIVE)
        assert result.status == "unverified"
        assert result.reasons == []

    def test_a_failure_wins(self) -> None:
        """Kills `if result.failed: return "failed"` dropped or changed."""
        result = assess(
            case(),
            doc(receipt("vr_1", requirement="scope", status="failed"), receipt("vr_2")),
            LIVE,
        )
        assert result.status == "failed"
        assert result.failed == ["scope"]
        assert result.reasons == ["failed: scope"]


class TestLabels:
    def test_a_failed_named_claim_is_labelled_by_its_claim(self) -> None:
        """Kills `_label` 1, 2, 4: a failed named claim mislabelled (issue 21).

        The label is `claim <id>`; a failed verifier run is labelled by its requirement, and a
        receipt with neither (a marker) by its own id.
        """
        result = assess(
            case(),
            doc(
                receipt("vr_1", purpose="named_claim", claim_id="AC7", status="failed"),
                receipt("vr_2", requirement="command:unit", status="failed"),
                receipt("vr_3", purpose="marker", status="failed"),
            ),
            LIVE,
        )
        assert result.failed == ["claim AC7", "command:unit", "vr_3"]
        assert result.reasons == [
            "failed: claim AC7, command:unit, vr_3",
            "claims without a current pass: AC7",
        ]
        assert result.unproven_claims == ["AC7"]

    def test_an_unproven_claim_without_an_id_is_named_by_its_receipt(self) -> None:
        """Kills `receipt.claim_id or receipt.id` -> `receipt.claim_id and receipt.id`."""
        result = assess(case(), doc(receipt("vr_9", purpose="named_claim", status="failed")), LIVE)
        assert result.unproven_claims == ["vr_9"]
        assert result.failed == ["claim None"]


class TestLive:
    def test_an_uncapturable_workspace_makes_nothing_proof(self) -> None:
        """Kills `assess` 25, 32, 33 (`live` dropped or inverted, issue 21), `_reasons` 1-3.

        The reason names why: `nothing counts as proof: <the capture's reason>`, first.
        """
        result = assess(
            case(["scope"]),
            doc(receipt("vr_1", requirement="scope")),
            Capture(reason="not a git repository"),
        )
        assert result.live == "not a git repository"
        assert result.receipts[0].proof is False
        assert result.receipts[0].stale is True
        assert result.stale == ["vr_1"]
        assert result.status == "unverified"
        assert result.reasons == [
            "nothing counts as proof: not a git repository",
            "1 receipt(s) are stale: the code changed since they were made",
            "required verifiers without a current pass: scope",
        ]
        assert result.currency is not None
        assert result.currency.current is False

    def test_a_capture_without_a_reason(self) -> None:
        """Kills `assess` 34, 35: `live.reason or "..."` -> `and`, the sentence changed."""
        result = assess(case(), doc(receipt("vr_1")), Capture())
        assert result.live == "the workspace could not be captured"
        assert result.reasons[0] == "nothing counts as proof: the workspace could not be captured"

    def test_a_bound_capture_has_no_live_reason(self) -> None:
        """Kills `live=None if live.bound` with the branches swapped."""
        result = assess(case(), doc(receipt("vr_1")), LIVE)
        assert result.live is None
        assert result.status == "verified"


class TestBinding:
    def test_an_unbound_batch(self) -> None:
        """Kills the unbound reason dropped or its join changed, and `currency` set for it."""
        result = assess(
            case(),
            doc(
                receipt("vr_1", binding="unbound", tree=None),
                batches=[
                    batch(binding="unbound", reasons=["no commit yet", "git failed"], tree=None)
                ],
            ),
            LIVE,
        )
        assert result.binding == "unbound"
        assert result.unbound == ["vr_1"]
        assert result.stale == []
        assert result.receipts[0].proof is False
        assert result.receipts[0].stale is False
        assert result.currency is None
        assert result.status == "unverified"
        assert result.reasons == ["the latest batch is unbound: no commit yet; git failed"]

    def test_an_unbound_failure_is_not_a_failure(self) -> None:
        """Kills `proof and status == "failed"` -> `or`."""
        result = assess(
            case(),
            doc(receipt("vr_1", binding="unbound", status="failed"), receipt("vr_2")),
            LIVE,
        )
        assert result.failed == []
        assert result.unbound == ["vr_1"]
        assert result.status == "verified"

    def test_an_unbound_pass_is_not_a_pass(self) -> None:
        """Kills `proof and status == "passed"` -> `or`."""
        result = assess(case(), doc(receipt("vr_1", binding="unbound")), LIVE)
        assert result.status == "unverified"

    def test_stale_receipts(self) -> None:
        """Kills the stale list, its count in the reason, and `stale`/`proof` mutants."""
        moved = Capture(head=HEAD_A, digest="sha256:e", tree=TREE_Y, head_tree=TREE_X)
        result = assess(
            case(["scope"]), doc(receipt("vr_1", requirement="scope"), receipt("vr_2")), moved
        )
        assert result.stale == ["vr_1", "vr_2"]
        assert result.unbound == []
        assert [v.proof for v in result.receipts] == [False, False]
        assert result.status == "unverified"
        assert result.reasons == [
            "2 receipt(s) are stale: the code changed since they were made",
            "required verifiers without a current pass: scope",
        ]

    def test_a_stale_failure_is_not_a_failure(self) -> None:
        """Kills `proof = bound and not stale` -> `bound or not stale` (a stale failure counts)."""
        moved = Capture(head=HEAD_A, digest="sha256:e", tree=TREE_Y)
        result = assess(case(), doc(receipt("vr_1", status="failed")), moved)
        assert result.failed == []
        assert result.stale == ["vr_1"]


class TestPlan:
    def test_a_new_plan_makes_the_batch_stale(self) -> None:
        """Kills the replanned check and its reason (first) dropped or moved."""
        result = assess(case(plan=PLAN), doc(receipt("vr_1"), batches=[batch(plan="d" * 64)]), LIVE)
        assert result.stale == ["vr_1"]
        assert result.status == "unverified"
        assert result.reasons == [
            "the plan changed after the latest batch: verify again",
            "1 receipt(s) are stale: the code changed since they were made",
        ]

    def test_the_same_plan_keeps_it(self) -> None:
        """Kills `plan.sha256 if plan else None` -> `None if plan else ...`."""
        result = assess(case(plan=PLAN), doc(receipt("vr_1"), batches=[batch(plan=PLAN)]), LIVE)
        assert result.status == "verified"
        assert result.reasons == []

    def test_no_plan_on_either_side(self) -> None:
        """Kills `replanned` when neither the case nor the batch has a plan."""
        result = assess(case(), doc(receipt("vr_1"), batches=[batch(plan=None)]), LIVE)
        assert result.status == "verified"

    def test_a_plan_made_after_a_planless_batch(self) -> None:
        result = assess(case(plan=PLAN), doc(receipt("vr_1"), batches=[batch(plan=None)]), LIVE)
        assert result.stale == ["vr_1"]


class TestRequirementsAndClaims:
    def test_every_run_of_a_requirement_must_pass(self) -> None:
        """Kills `not runs or any(...)` -> `all(...)` or `and`: one failing run of two leaves it
        missing."""
        result = assess(
            case(["command:unit"]),
            doc(
                receipt("vr_1", requirement="command:unit"),
                receipt("vr_2", requirement="command:unit", status="not_run"),
            ),
            LIVE,
        )
        assert result.missing_requirements == ["command:unit"]
        assert result.status == "partial"

    def test_a_requirement_needs_a_verifier_run(self) -> None:
        """Kills `purpose == "verifier_run"` dropped: a claim on the requirement is not a run."""
        result = assess(
            case(["scope"]),
            doc(
                receipt("vr_1", purpose="named_claim", requirement="scope", claim_id="C1"),
                receipt("vr_2", requirement="other"),
            ),
            LIVE,
        )
        assert result.missing_requirements == ["scope"]

    def test_only_the_latest_batch_counts(self) -> None:
        """Kills `r.batch_id == batch.id` -> `!=`, and `batches[-1]` changed."""
        result = assess(
            case(["scope"]),
            doc(
                receipt("vr_0", requirement="scope", batch_id="vb_0"),
                receipt("vr_1", requirement="other", batch_id="vb_1"),
                batches=[batch("vb_0"), batch("vb_1")],
            ),
            LIVE,
        )
        assert result.batch_id == "vb_1"
        assert [v.id for v in result.receipts] == ["vr_1"]
        assert result.missing_requirements == ["scope"]

    def test_a_criterion_needs_its_exact_statement(self) -> None:
        """Kills each conjunct of the criterion check dropped (`and` -> `or`)."""
        criteria = {"AC1": "works", "AC2": "is fast", "AC3": "is small"}
        result = assess(
            case(criteria=criteria),
            doc(
                receipt("vr_1", purpose="named_claim", claim_id="AC1", claim="works"),
                receipt("vr_2", purpose="named_claim", claim_id="AC2", claim="is quick"),
                receipt("vr_3", purpose="marker", claim_id="AC3", claim="is small"),
                receipt("vr_4", purpose="named_claim", claim_id="AC9", claim="is small"),
            ),
            LIVE,
        )
        assert result.missing_criteria == ["AC2", "AC3"]
        assert result.unproven_claims == []

    def test_a_criterion_needs_a_proven_claim(self) -> None:
        result = assess(
            case(criteria={"AC1": "works"}),
            doc(
                receipt(
                    "vr_1", purpose="named_claim", claim_id="AC1", claim="works", status="not_run"
                )
            ),
            LIVE,
        )
        assert result.missing_criteria == ["AC1"]
        assert result.unproven_claims == ["AC1"]


class TestCurrency:
    def test_is_current(self) -> None:
        assert is_current(HEAD_A, "sha256:d", TREE_X, Capture(head=HEAD_B, digest="x", tree=TREE_X))
        assert not is_current(
            HEAD_A, "sha256:d", TREE_X, Capture(head=HEAD_A, digest="sha256:d", tree=TREE_Y)
        )
        assert not is_current(HEAD_A, "sha256:d", TREE_X, Capture(head=HEAD_A, tree=TREE_X))
        assert not is_current(HEAD_A, "sha256:d", TREE_X, Capture(digest="sha256:d", tree=TREE_X))
        assert is_current(HEAD_A, "sha256:d", None, Capture(head=HEAD_A, digest="sha256:d"))
        assert not is_current(HEAD_A, "sha256:d", None, Capture(head=HEAD_A, digest="sha256:e"))
        assert not is_current(HEAD_A, "sha256:d", None, Capture(head=HEAD_B, digest="sha256:d"))

    def test_committed_unchanged(self) -> None:
        facts = currency(
            batch(head_tree=TREE_Y), Capture(head=HEAD_B, digest="z", tree=TREE_X, head_tree=TREE_X)
        )
        assert msgspec.to_builtins(facts) == {
            "rule": "tree",
            "current": True,
            "verifiedHead": HEAD_A,
            "verifiedTree": TREE_X,
            "uncommitted": True,
            "head": HEAD_B,
            "tree": TREE_X,
            "committed": True,
            "summary": (
                "verified at aaaaaaa with uncommitted changes; committed unchanged as bbbbbbb"
            ),
        }

    def test_head_moved_but_not_committed(self) -> None:
        facts = currency(
            batch(head_tree=TREE_X), Capture(head=HEAD_B, digest="z", tree=TREE_X, head_tree=TREE_Y)
        )
        assert facts.current
        assert facts.uncommitted is False
        assert not facts.committed
        assert facts.summary == (
            "verified at aaaaaaa; HEAD is now bbbbbbb and the work tree still holds exactly the "
            "verified code"
        )

    def test_committed_needs_head_to_move(self) -> None:
        """Kills `moved` dropped from `committed`: HEAD as verified is not a new commit."""
        facts = currency(batch(), Capture(head=HEAD_A, digest="z", tree=TREE_X, head_tree=TREE_X))
        assert not facts.committed
        assert facts.summary == "verified at aaaaaaa; unchanged since"

    def test_committed_needs_the_commit_to_hold_the_code(self) -> None:
        facts = currency(batch(), Capture(head=HEAD_B, digest="z", tree=TREE_X, head_tree=None))
        assert not facts.committed

    def test_changed(self) -> None:
        facts = currency(batch(), Capture(head=HEAD_B, digest="z", tree=TREE_Y))
        assert not facts.current
        assert facts.summary == (
            "verified at aaaaaaa; the code changed since (HEAD is now bbbbbbb, tree 1111111 is now "
            "2222222)"
        )
        same_head = currency(batch(), Capture(head=HEAD_A, digest="z", tree=TREE_Y))
        assert (
            same_head.summary
            == "verified at aaaaaaa; the code changed since (tree 1111111 is now 2222222)"
        )

    def test_a_tree_that_cannot_be_named(self) -> None:
        facts = currency(batch(), Capture(head=HEAD_A, digest="z", tree_reason="why not"))
        assert facts.summary == "verified at aaaaaaa; the code cannot be compared now: why not"

    def test_an_unbound_capture(self) -> None:
        facts = currency(batch(), Capture(reason="gone"))
        assert facts.current is False
        assert facts.committed is False
        assert facts.summary == "verified at aaaaaaa; the code cannot be compared now: gone"

    def test_without_a_tree_id(self) -> None:
        old = batch(tree=None, head_tree=TREE_X)
        facts = currency(
            old, Capture(head=HEAD_A, digest="sha256:d", tree=TREE_X, head_tree=TREE_X)
        )
        assert facts.rule == "head_and_digest"
        assert facts.uncommitted is None
        assert facts.committed is False
        assert facts.summary == (
            "verified at aaaaaaa; unchanged since (no tree id was recorded, so a commit will make "
            "it stale)"
        )
        moved = currency(
            old, Capture(head=HEAD_B, digest="sha256:d", tree=TREE_X, head_tree=TREE_X)
        )
        assert not moved.current
        assert moved.committed is False
        assert moved.summary == (
            "verified at aaaaaaa; HEAD or the work tree changed since (no tree id was recorded)"
        )

    def test_an_unknown_head(self) -> None:
        odd = msgspec.structs.replace(batch(), revision=None)
        facts = currency(odd, Capture(head=HEAD_A, digest="z", tree=TREE_X))
        assert facts.summary.startswith("verified at ?; ")


class TestSurvivors:
    """Tests for the mutants the first mutation run left alive (docs/testing.md)."""

    def test_every_missing_item_is_listed_with_commas(self) -> None:
        """Kills `_reasons` 25, 31, 37: `", ".join(...)` -> `"XX, XX".join(...)` for the
        missing requirements, the unproven claims and the missing criteria."""
        result = assess(
            case(["command:unit", "scope"], {"AC1": "works", "AC2": "is fast"}),
            doc(
                receipt("vr_1", purpose="marker"),
                receipt("vr_2", purpose="named_claim", claim_id="C1", status="not_run"),
                receipt("vr_3", purpose="named_claim", claim_id="C2", status="not_run"),
            ),
            LIVE,
        )
        assert result.status == "partial"
        assert result.reasons == [
            "required verifiers without a current pass: command:unit, scope",
            "claims without a current pass: C1, C2",
            "acceptance criteria without a current, exact, passing claim: AC1, AC2",
        ]

    def test_an_older_receipt_is_current_by_its_own_head_and_digest(self) -> None:
        """Kills `assess` 55 and 56: `is_current(receipt.revision, ...)` and
        `is_current(..., receipt.dirty_digest, ...)` with the receipt's value -> None.

        A receipt written before tree ids has none: its HEAD and digest decide.
        """
        old = receipt("vr_1", tree=None)
        live = Capture(head=HEAD_A, digest="sha256:d", tree=TREE_Y)
        result = assess(case(), doc(old, batches=[batch(tree=None)]), live)
        assert result.stale == []
        assert result.status == "verified"

    def test_a_receipt_is_current_by_its_own_tree(self) -> None:
        """Kills `assess` 57: `is_current(..., receipt.tree, live)` -> `is_current(..., None,
        live)`: HEAD moved, the tree is the verified one, so the receipt is still current."""
        committed = Capture(head=HEAD_B, digest="sha256:z", tree=TREE_X, head_tree=TREE_X)
        result = assess(case(), doc(receipt("vr_1")), committed)
        assert result.stale == []
        assert result.status == "verified"


class TestAcknowledged:
    """A pass by acknowledgement (`--ack-drift`) counts, and is named as one (issue 19)."""

    def test_an_acknowledged_pass_is_named(self) -> None:
        result = assess(
            case(["scope"]),
            doc(
                receipt("vr_1", requirement="scope", acknowledged="drift"),
                receipt("vr_2", purpose="marker", acknowledged="drift"),
                receipt("vr_3", acknowledged="drift", status="failed", requirement="unit"),
            ),
            LIVE,
        )
        assert [v.acknowledged for v in result.receipts] == ["drift", "drift", None]
        assert result.acknowledged == ["scope (drift)", "vr_2 (drift)"]
        assert result.status == "failed"
        assert result.reasons == [
            "failed: unit",
            "passed only by acknowledgement: scope (drift), vr_2 (drift)",
        ]

    def test_an_older_scope_receipt_says_so_in_its_note(self) -> None:
        from cortex.verifiers.scope import ACK_NOTE

        noted = receipt("vr_1", requirement="scope", notes=["x", ACK_NOTE])
        plain_pass = receipt("vr_2", requirement="unit", notes=["x"])
        result = assess(case(["scope", "unit"]), doc(noted, plain_pass), LIVE)
        assert [v.acknowledged for v in result.receipts] == ["drift", None]
        assert result.acknowledged == ["scope (drift)"]
        assert result.status == "verified"
        assert result.reasons == ["passed only by acknowledgement: scope (drift)"]

    def test_a_stale_acknowledged_pass_is_not_listed(self) -> None:
        moved = Capture(head=HEAD_A, digest="sha256:e", tree=TREE_Y)
        result = assess(case(), doc(receipt("vr_1", acknowledged="drift")), moved)
        assert result.receipts[0].acknowledged == "drift"
        assert result.acknowledged == []

    def test_failing_names_and_their_total(self) -> None:
        result = assess(
            case(),
            doc(
                receipt("vr_1", status="failed", failing=["t1", "t2"], failingTotal=5),
                receipt("vr_2", status="failed", failing=["t3"], failingTotal=0),
            ),
            LIVE,
        )
        assert [(v.failing, v.failing_total) for v in result.receipts] == [
            (["t1", "t2"], 5),
            (["t3"], 1),
        ]
