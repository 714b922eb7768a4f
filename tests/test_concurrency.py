"""Concurrent writers are real processes on one case: nothing lost, nothing interleaved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CHILDREN, Cli, case_path

pytestmark = pytest.mark.process  # every test here starts Python processes

WRITER = str(CHILDREN / "writer.py")


def spawn(cli: Cli, mode: str, writers: int, count: int, task: str) -> list[dict[str, object]]:
    env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "300"}
    procs = [
        subprocess.Popen(
            [sys.executable, WRITER, mode, str(w), str(count), str(cli.cwd), task],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(writers)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err.decode()
        results.append(json.loads(out))
    return results


def test_sixteen_appenders_lose_nothing(cli: Cli, task: str) -> None:
    """16 processes x 500 appends: 8,000 lines, unique ids, valid chain, per-writer order."""
    writers, count = 16, 500
    results = spawn(cli, "append", writers, count, task)
    assert all(r == {"ok": count, "conflicts": 0, "other": []} for r in results), results
    lines = (case_path(cli.env, task) / "evidence.jsonl").read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == writers * count
    assert len({r["id"] for r in records}) == writers * count
    last_seq = dict.fromkeys(range(writers), -1)
    for record in records:
        _, writer, _, seq = record["claim"].split()
        assert int(seq) == last_seq[int(writer)] + 1, "a writer's records are out of order"
        last_seq[int(writer)] = int(seq)
    status = cli("case", "status", task).data
    assert status["counts"]["evidence"] == writers * count
    assert status["revision"] == 1 + writers * count
    audit = cli("case", "audit", task).data
    assert audit["ok"] is True
    assert audit["records"]["evidence"] == writers * count


def test_read_modify_write_is_compare_and_swap(cli: Cli, task: str) -> None:
    """8 writers x 100 CAS updates: final revision = successes; losers got exit 6, nothing else."""
    writers, count = 8, 100
    results = spawn(cli, "rmw", writers, count, task)
    successes = sum(int(r["ok"]) for r in results)  # type: ignore[call-overload]
    conflicts = sum(int(r["conflicts"]) for r in results)  # type: ignore[call-overload]
    assert all(r["other"] == [] for r in results), results
    assert successes + conflicts == writers * count
    assert conflicts > 0, "the race never happened, so the test proved nothing"
    status = cli("case", "status", task).data
    assert status["revision"] == 1 + successes
    assert status["counts"]["evidence"] == successes
    assert cli("case", "audit", task).data["ok"] is True


def test_concurrent_keyed_opens_create_one_case(cli: Cli, repo: Path) -> None:
    """Many processes opening with the same idempotency key get one and the same case."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cortex",
                "case",
                "open",
                "Same goal",
                "--idempotency-key",
                "k-1",
                "--json",
            ],
            cwd=repo,
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(8)
    ]
    ids = set()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        ids.add(json.loads(out)["data"]["taskId"])
    assert len(ids) == 1
    assert cli("case", "list").data["total"] == 1
