"""One case seeded in-process with a fixed clock, for the golden tests of the reviewer views.

It has what those tests promise to cover: evidence of several kinds (one sensitive, one holding
a made-up token, one with raw output), a note, a plan, an answered decision, a verify run whose
receipt an edit has made stale, and a pending decision. `normalized` replaces generated ULIDs
with <1>, <2>, ... in order of first appearance, so the output is stable from run to run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conftest import base_env, configure_verifiers, make_repo

GOLDEN = Path(__file__).resolve().parent / "golden"
TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"
"""A made-up token in a shape the redactor knows (split so scanners do not flag this file)."""
PASSWORD = "hunter2-" + "made-up-7731"
SENSITIVE_CLAIM = "SENSITIVE-CLAIM-MARKER the staging database answers on 5432"
RAW_BODY = b"RAW-BODY-MARKER full tool output\n"
LONG_CLAIM = "the callback " + " ".join(f"step{n}" for n in range(60)) + " and more"


class Clock:
    """A clock that only moves when the test says so."""

    def __init__(self) -> None:
        self.now = 1_736_000_000.0  # 2025-01-04T14:13:20Z

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float = 60.0) -> None:
        self.now += seconds


ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")


def normalized(text: str) -> str:
    """Generated ULIDs become <1>, <2>, ... in order of first appearance; timings become N."""
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return names.setdefault(match.group(), f"<{len(names) + 1}>")

    text = ULID.sub(name, text)
    return re.sub(r"in [0-9]+\.[0-9]+ s", "in N s", text)


def seed_golden(tmp_path: Path) -> tuple[Any, str]:
    """A case seeded in-process with a fixed clock; returns (kernel, task id)."""
    from cortex.kernel.human.decisions import answer, request
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.lease import begin_change
    from cortex.kernel.proof.verify import verify
    from cortex.kernel.steps.evidence import add_evidence, add_note
    from cortex.kernel.steps.open_case import open_case
    from cortex.kernel.steps.plan import plan

    env = base_env(tmp_path)
    # Fixed commit dates: the commit ids (shown in the assessment's "code" line) stay the same.
    env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = "2025-01-04T14:13:20Z"
    repo = make_repo(tmp_path / "repo", env)
    configure_verifiers(repo, env, {"unit": ["sh", "-c", "echo 3 passed"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    clock = Clock()
    kernel = Kernel(str(repo), env, default_actor="agent-1", clock=clock)
    task = open_case(kernel, goal="Fix the checkout redirect").data["taskId"]
    clock.step()
    located = add_evidence(
        kernel, task, claim="resolve_return_url falls back to /", kind="code_location",
        file="app.py", line="1", confidence="high",
    ).data["evidence"].id  # fmt: skip
    clock.step()
    add_evidence(kernel, task, claim=SENSITIVE_CLAIM, sensitive=True)
    clock.step()
    add_evidence(
        kernel, task, claim=f"the deploy log shows {TOKEN}", kind="terminal_run", raw=RAW_BODY
    )
    clock.step()
    add_note(kernel, task, text="return_to is dropped\nbefore the callback")
    clock.step()
    add_evidence(kernel, task, claim=LONG_CLAIM, actor="reviewer-2")
    clock.step()
    plan(
        kernel, task, hypotheses=["the callback drops return_to :: a request with it lands on /"],
        supports=[f"1={located}"], files=["app.py"], boundary_reason="the redirect lives there",
        verify=["command:unit"], uncertainty="the login link may drop it earlier",
    )  # fmt: skip
    clock.step()
    asked = request(
        kernel, task, question=f"Rotate the key first? password={PASSWORD}",
        options=["safe=Safe migration|slower rollout", "fast=Fast migration|riskier rollback"],
    ).data["decision"].id  # fmt: skip
    clock.step()
    # Alice answers at her terminal, typing the option id (docs/design/trust.md).
    at_terminal = Kernel(str(repo), env, default_actor="agent-1", clock=clock, via="cli-tty")
    answer(at_terminal, task, asked, option="safe", responder="alice", confirm=lambda a: a.option)
    clock.step()
    token = begin_change(kernel, task, actor="agent-1").data["leaseToken"]
    clock.step()
    (repo / "app.py").write_text("print('fixed')\n")
    verify(kernel, task, lease_token=token)
    clock.step()
    (repo / "app.py").write_text("print('edited after the proof')\n")
    request(
        kernel, task, question="Ship it behind a flag?",
        options=["yes=Behind a flag", "no=Straight out"],
    )  # fmt: skip
    return kernel, task
