"""The lease's back doors, tried again (issue 27, deliverable 4): real processes, no terminal.

A second agent without the holder's token may ask a person a question on the holder's case
(decision requests never needed the lease, docs/design/trust.md): that pauses the holder until a
person answers, but it must not hand the lease over, and nothing it can do next takes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Cli, ready_to_verify
from trust_kit import OPTIONS, detached

pytestmark = pytest.mark.process  # its tests start cortex processes


def test_a_question_asked_by_another_agent_pauses_the_case_but_keeps_the_lease(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    task = ready_to_verify(cli)
    other = {k: v for k, v in env.items() if k != "CORTEX_LEASE_TOKEN"}
    other["CORTEX_ACTOR"] = "agent-2"
    asked = detached(["case", "decision", "request", task, "--question", "Stop?", *OPTIONS],
                     other, repo)  # fmt: skip
    assert asked.code == 0, asked.stdout
    lease = cli("case", "status", task).data["lease"]
    assert (lease["actor"], lease["state"]) == ("agent-1", "active")
    for args in (
        ["case", "begin-change", task],
        ["case", "abort", task, "--reason", "mine now"],
        ["case", "block", task, "--reason", "mine now"],
        ["case", "lease", "release", task, "--actor", "agent-1"],
        ["case", "lease", "renew", task, "--actor", "agent-1"],
    ):
        out = detached(args, other, repo)
        assert out.code in {5, 6}, (args, out.stdout)
    lease = cli("case", "status", task).data["lease"]
    assert (lease["actor"], lease["state"]) == ("agent-1", "active")


def test_a_case_whose_lease_is_held_cannot_be_archived_pruned_or_removed(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    """Only closed cases leave (and closing ends the lease): another agent cannot archive, prune
    or remove a case from under its holder."""
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    task = ready_to_verify(cli)
    other = {k: v for k, v in env.items() if k != "CORTEX_LEASE_TOKEN"}
    other["CORTEX_ACTOR"] = "agent-2"
    assert detached(["case", "archive", task], other, repo).code == 5
    pruned = detached(["case", "prune", "--older-than", "1s", "--apply"], other, repo)
    assert pruned.code == 0, pruned.stdout
    assert [c["done"] for c in pruned.envelope["data"]["cases"]] in ([], [False])
    assert detached(["case", "rm", task, "--force"], other, repo).code == 5
    lease = cli("case", "status", task).data["lease"]
    assert (lease["actor"], lease["state"]) == ("agent-1", "active")
