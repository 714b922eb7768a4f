"""Lifecycle helpers shared by the lifecycle tests: a case taken to a phase, ledgers read."""

from __future__ import annotations

import json
from typing import Any

from conftest import Cli, case_path

OPTIONS = ("--option", "safe=Safe migration|slower rollout", "--option", "fast=Fast|riskier")
QUESTION = ("--question", "Which migration?")
BOUNDARY = (
    "--file",
    "src/auth/callback.py",
    "--symbol",
    "resolve_return_url",
    "--boundary-reason",
    "the redirect is decided there",
    "--verify",
    "pytest",
)
"""A change boundary with its reason and a verifier: what a change task's plan needs."""
HYPOTHESIS = "the callback drops return_to :: a request with return_to still lands on /"
UNCERTAINTY = ("--uncertainty", "the login link may drop it earlier")


def investigating(cli: Cli, *open_args: str) -> str:
    """A case with one piece of evidence (phase investigating)."""
    task = cli.open("Fix the login redirect", *open_args)
    add_evidence(cli, task)
    return task


def planned(cli: Cli, *open_args: str) -> str:
    """A change case with a committed first plan (phase planned)."""
    task = investigating(cli, *open_args)
    assert cli(*plan_args(task)).data["status"] == "planned"
    return task


def ledger(env: dict[str, str], task: str, name: str) -> list[dict[str, Any]]:
    """Every record of a ledger, oldest first."""
    path = case_path(env, task) / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def request_decision(cli: Cli, task: str, *options: str) -> dict[str, Any]:
    """Ask the standard question; return the command's data."""
    data: dict[str, Any] = cli(
        "case", "decision", "request", task, *QUESTION, *(options or OPTIONS)
    ).data
    return data


def action_commands(envelope: dict[str, Any]) -> list[str]:
    """The `actions` commands of an envelope (an absent list is empty)."""
    return [action["command"] for action in envelope.get("actions") or []]


def add_evidence(cli: Cli, task: str, claim: str = "the callback ignores return_to") -> str:
    """Record one piece of evidence and return its id."""
    evidence_id: str = cli("case", "evidence", "add", task, "--claim", claim).data["evidence"]["id"]
    return evidence_id


def plan_args(task: str, *extra: str, hypothesis: str = HYPOTHESIS) -> list[str]:
    """A complete change-mode `case plan` command line."""
    return ["case", "plan", task, "--hypothesis", hypothesis, *UNCERTAINTY, *BOUNDARY, *extra]
