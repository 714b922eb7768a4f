"""`cortex case sessions` and `cortex case overview`: every case under one state root.

One world is built once: two git repositories and a plain directory sharing a state root, with
cases driven for real (through the CLI) into different phases, and a third repository whose
store is configured inside it. Every test reads that world and checks exact values.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    Outcome,
    base_env,
    case_path,
    configure_verifiers,
    git,
    make_repo,
    tree_state,
)

from cortex.cases import bounds
from cortex.kernel.kernel import Kernel, parse_time
from cortex.kernel.views.sessions import overview, parse_duration, sessions


@dataclass
class World:
    env: dict[str, str]
    state: Path
    alpha: Cli
    beta: Cli
    plain: Cli
    gamma: Cli
    cases: dict[str, str]
    """Name -> task id."""
    roots: dict[str, Path]


def _planned(cli: Cli, goal: str, verify: str = "scope", *, mode: str = "change") -> str:
    task = cli.open(goal, "--mode", mode)
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    plan = ["case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right"]
    plan += ["--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none"]
    plan += ["--verify", verify]
    if mode == "change":
        plan += ["--file", "app.py", "--boundary-reason", "the bug lives here"]
    assert cli(*plan).code == 0
    return task


def _changing(cli: Cli, goal: str, verify: str = "scope") -> str:
    task = _planned(cli, goal, verify)
    assert cli("case", "begin-change", task, "--actor", "agent-1").code == 0
    return task


def _verified(cli: Cli, repo: Path, goal: str, verify: str, text: str) -> dict[str, Any]:
    """A change case verified once after editing app.py to `text`; returns verify's data."""
    task = _changing(cli, goal, verify)
    (repo / "app.py").write_text(text)
    data: dict[str, Any] = cli("case", "verify", task).data
    data["taskId"] = task
    return data


def _complete(cli: Cli, task: str, *extra: str) -> None:
    out = cli("case", "complete", task, "--outcome", "done", "--actor", "agent-1", *extra)
    assert out.code == 0, out.stdout


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Ten cases in three stores under one state root, and one in a repository's own store."""
    tmp = tmp_path_factory.mktemp("world")
    env = base_env(tmp)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    roots = {
        "alpha": make_repo(tmp / "alpha", env),
        "beta": make_repo(tmp / "beta", env),
        "plain": tmp / "plain",
        "gamma": make_repo(tmp / "gamma", env),
    }
    roots["plain"].mkdir()
    (roots["plain"] / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    configure_verifiers(roots["beta"], env, {"unit": ["true"], "bad": ["false"]})
    (roots["gamma"] / "cortex.toml").write_text('cases_dir = ".cortex/cases"\n')
    git(roots["gamma"], "add", "cortex.toml", env=env)
    git(roots["gamma"], "commit", "-q", "-m", "own store", env=env)
    alpha, beta, plain, gamma = (Cli(env, roots[n]) for n in ("alpha", "beta", "plain", "gamma"))
    cases: dict[str, str] = {}
    cases["a_open"] = alpha.open("Alpha open only")
    cases["a_planned"] = _planned(alpha, "Alpha planned change")
    cases["a_changing"] = _changing(alpha, "Alpha changing with a lease")
    task = alpha.open("Alpha waiting on a person")
    assert alpha("case", "note", task, "looked around").code == 0
    out = alpha(
        "case", "decision", "request", task, "--question", "Which way?",
        "--option", "a=A|slow", "--option", "b=B|fast",
    )  # fmt: skip
    assert out.code == 0, out.stdout
    cases["a_decision"] = task
    beta_repo = roots["beta"]
    done = _verified(beta, beta_repo, "Beta verified fix", "command:unit", "print('one')\n")
    assert done["assessment"]["status"] == "verified"
    _complete(beta, done["taskId"])
    cases["b_verified"] = done["taskId"]
    failed = _verified(beta, beta_repo, "Beta accepted failure", "command:bad", "print('two')\n")
    assert failed["assessment"]["status"] == "failed"
    _complete(beta, failed["taskId"], "--accept-failed", "known flaky")
    cases["b_failed"] = failed["taskId"]
    task = beta.open("Beta abandoned idea")
    assert beta("case", "abort", task, "--reason", "duplicate").code == 0
    cases["b_abandoned"] = task
    # Last in beta: nothing changes the code after this batch, so it is still proof.
    current = _verified(beta, beta_repo, "Beta verifying now", "command:unit", "print('3')\n")
    assert current["assessment"]["status"] == "verified"
    cases["b_verifying"] = current["taskId"]
    cases["p_open"] = plain.open("Plain directory notes")
    task = _planned(plain, "Plain unprovable check", "command:unit", mode="investigate")
    assert plain("case", "verify", task).data["assessment"]["status"] == "unverified"
    _complete(plain, task, "--verification-not-possible", "no git here")
    cases["p_unprovable"] = task
    cases["g_open"] = gamma.open("Gamma in its own store")
    # As if gamma's store predated the registry: most tests look at what is found without it
    # (test_a_registered_store_is_seen_from_everywhere covers the registry).
    shutil.rmtree(Path(env["CORTEX_STATE_DIR"]) / "stores")
    return World(env, Path(env["CORTEX_STATE_DIR"]), alpha, beta, plain, gamma, cases, roots)


VISIBLE = 10
"""Cases visible from alpha, beta or plain: gamma's store is inside gamma, and unregistered."""


def _status(world: World, name: str) -> dict[str, Any]:
    cli = world.gamma if name.startswith("g_") else world.alpha
    data: dict[str, Any] = cli("case", "status", world.cases[name]).data
    return data


def _expected_order(world: World, names: list[str]) -> list[str]:
    """Task ids newest update first (ties by id), from `case status`, an independent reader."""
    keyed = [(_status(world, n)["updatedAt"], world.cases[n]) for n in names]
    return [task for _, task in sorted(keyed, reverse=True)]


def _items(out: Outcome) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = out.data["items"]
    return items


def _snapshot(world: World) -> dict[str, Any]:
    """Every file under the state root, gamma's own store and each repository's .git."""
    return {
        "state": tree_state(world.state),
        "gamma-store": tree_state(world.roots["gamma"] / ".cortex"),
        **{f"{n}.git": tree_state(world.roots[n] / ".git") for n in ("alpha", "beta", "gamma")},
    }


def _by_id(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["taskId"]: item for item in items}


class TestSessions:
    def test_every_case_of_every_store_newest_first(self, world: World) -> None:
        out = world.alpha("case", "sessions")
        data = out.data
        names = [n for n in world.cases if not n.startswith("g_")]
        assert data["total"] == VISIBLE == len(names)
        assert data["stores"] == 3
        assert data["truncated"] is False
        assert data["limit"] == bounds.SESSIONS_LIMIT_DEFAULT
        assert [i["taskId"] for i in _items(out)] == _expected_order(world, names)
        # The same from any of the workspaces: the listing is not scoped to the current one.
        elsewhere = world.plain("case", "sessions").data
        assert [i["taskId"] for i in elsewhere["items"]] == [i["taskId"] for i in data["items"]]

    def test_items_carry_phase_lease_decisions_and_verdicts(self, world: World) -> None:
        items = _by_id(_items(world.alpha("case", "sessions")))
        ids = world.cases
        assert {items[ids[n]]["status"] for n in ("a_open", "p_open")} == {"orienting"}
        assert items[ids["a_planned"]]["status"] == "planned"
        changing = items[ids["a_changing"]]
        assert changing["status"] == "changing"
        assert changing["lease"]["actor"] == "agent-1"
        assert changing["lease"]["expiresAt"] == _status(world, "a_changing")["lease"]["expiresAt"]
        waiting = items[ids["a_decision"]]
        assert (waiting["status"], waiting["pausedFrom"]) == (
            "needs_human_decision",
            "investigating",
        )
        assert waiting["pendingDecisions"] == 1
        assert sum(i["pendingDecisions"] for i in items.values()) == 1
        holders = {i["taskId"] for i in items.values() if i["lease"]}
        assert holders == {ids["a_changing"], ids["b_verifying"]}
        verdicts = {n: items[ids[n]]["verdict"] for n in ids if not n.startswith("g_")}
        assert verdicts["b_verified"] == {
            "status": "verified",
            "source": "completion",
            "kind": "verified",
        }
        assert verdicts["b_failed"] == {
            "status": "failed",
            "source": "completion",
            "kind": "accepted_failed",
        }
        assert verdicts["p_unprovable"] == {
            "status": "unverified",
            "source": "completion",
            "kind": "verification_not_possible",
        }
        assert verdicts["b_verifying"] == {"status": "verified", "source": "now", "kind": None}
        assert verdicts["a_open"] == {"status": "unverified", "source": "now", "kind": None}
        assert verdicts["b_abandoned"] is None
        assert items[ids["b_abandoned"]]["active"] is False
        plain = items[ids["p_open"]]
        assert plain["workspace"]["kind"] == "directory"
        assert plain["workspace"]["root"] == str(world.roots["plain"].resolve())
        for name in ("a_open", "b_verified", "p_open"):
            item, status = items[ids[name]], _status(world, name)
            assert item["store"]["id"] == status["store"]["id"]
            assert item["store"]["root"] == str(case_path(world.env, ids[name]).parent)
            assert (item["createdAt"], item["updatedAt"]) == (
                status["createdAt"],
                status["updatedAt"],
            )
            assert (item["mode"], item["risk"], item["revision"]) == (
                status["mode"],
                status["risk"],
                status["revision"],
            )
        assert not any(i["stale"] for i in items.values())

    def test_repo_filter_matches_repository_or_store(self, world: World) -> None:
        ids = world.cases
        alpha = world.alpha("case", "sessions", "--repo", "ALPHA").data
        expected = {ids[n] for n in ids if n.startswith("a_")}
        assert alpha["total"] == 4
        assert {i["taskId"] for i in alpha["items"]} == expected
        store = _status(world, "b_verified")["store"]["id"]
        beta = world.alpha("case", "sessions", "--repo", store).data
        assert beta["total"] == 4
        assert all(i["store"]["id"] == store for i in beta["items"])
        assert world.alpha("case", "sessions", "--repo", "plain").data["total"] == 2
        assert world.alpha("case", "sessions", "--repo", "nowhere").data["total"] == 0

    def test_active_filter(self, world: World) -> None:
        data = world.alpha("case", "sessions", "--active").data
        active = {"a_open", "a_planned", "a_changing", "a_decision", "b_verifying", "p_open"}
        assert data["total"] == len(active)
        assert {i["taskId"] for i in data["items"]} == {world.cases[n] for n in active}
        assert all(i["active"] for i in data["items"])

    def test_query_matches_goal_or_task_id_in_any_case(self, world: World) -> None:
        data = world.alpha("case", "sessions", "--query", "bETA").data
        assert data["total"] == 4
        assert {i["goal"] for i in data["items"]} == {
            "Beta verified fix",
            "Beta accepted failure",
            "Beta abandoned idea",
            "Beta verifying now",
        }
        task = world.cases["p_unprovable"]
        by_id = world.alpha("case", "sessions", "--query", task[-10:].lower()).data
        assert [i["taskId"] for i in by_id["items"]] == [task]
        combined = world.alpha("case", "sessions", "--query", "alpha", "--active", "--limit", "1")
        assert combined.data["total"] == 4
        assert len(combined.data["items"]) == 1
        assert combined.data["truncated"] is True

    def test_limit_keeps_the_newest_and_an_exact_total(self, world: World) -> None:
        full = [i["taskId"] for i in _items(world.alpha("case", "sessions"))]
        page = world.alpha("case", "sessions", "--limit", "3").data
        assert page["total"] == VISIBLE
        assert page["truncated"] is True
        assert [i["taskId"] for i in page["items"]] == full[:3]

    def test_stale_after_with_an_injected_clock(self, world: World) -> None:
        active = {"a_open", "a_planned", "a_changing", "a_decision", "b_verifying", "p_open"}
        assert world.alpha("case", "sessions", "--stale-after", "24h").data["total"] == 0
        later = time.time() + 2 * 86400
        kernel = Kernel(
            str(world.roots["alpha"]), world.env, default_actor="t", clock=lambda: later
        )
        stale = sessions(kernel, stale_after="24h").data
        assert stale["total"] == len(active)
        assert {i["taskId"] for i in stale["items"]} == {world.cases[n] for n in active}
        assert all(i["stale"] for i in stale["items"])
        # Two days on, the 15-minute lease has expired: no holder is shown.
        assert all(i["lease"] is None for i in stale["items"])
        assert sessions(kernel, stale_after="3d").data["total"] == 0
        assert sessions(kernel, stale_after=47 * 3600).data["total"] == len(active)
        # Without --stale-after nothing is filtered; the flag uses the default threshold.
        flagged = sessions(kernel).data
        assert flagged["total"] == VISIBLE
        assert flagged["staleAfterSeconds"] == bounds.STALE_AFTER_DEFAULT
        assert {i["taskId"] for i in flagged["items"] if i["stale"]} == {
            world.cases[n] for n in active
        }
        idle = {i["taskId"]: i["idleSeconds"] for i in flagged["items"]}
        updated = _status(world, "a_open")["updatedAt"]
        assert idle[world.cases["a_open"]] == pytest.approx(later - parse_time(updated), abs=0.002)

    def test_a_store_configured_inside_a_repository(self, world: World) -> None:
        """Unregistered, it is seen from its own repository only (nothing records where it is)."""
        task = world.cases["g_open"]
        here = world.gamma("case", "sessions").data
        assert here["total"] == VISIBLE + 1
        assert here["stores"] == 4
        (item,) = [i for i in here["items"] if i["taskId"] == task]
        assert item["store"] == {
            "id": "configured",
            "root": str(world.roots["gamma"].resolve() / ".cortex" / "cases"),
        }
        elsewhere = world.alpha("case", "sessions").data
        assert task not in {i["taskId"] for i in elsewhere["items"]}

    def test_listing_never_reads_a_ledger(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def refuse(*_args: object, **_kwargs: object) -> None:
            msg = "a listing read a ledger"
            raise AssertionError(msg)

        from cortex.cases import ledger
        from cortex.cases.store import CaseStore

        for name in ("iter_lines", "read_records", "find_lines", "line_containing"):
            monkeypatch.setattr(ledger, name, refuse)
        monkeypatch.setattr(CaseStore, "read_ledger", refuse)
        monkeypatch.setattr(CaseStore, "find_records", refuse)
        kernel = Kernel(str(world.roots["alpha"]), world.env, default_actor="t")
        assert sessions(kernel, limit=bounds.SESSIONS_LIMIT_MAX).data["total"] == VISIBLE
        assert overview(kernel).data["total"] == VISIBLE

    def test_human_output_is_a_table(self, world: World) -> None:
        out = world.alpha("case", "sessions", "--active", human=True)
        assert out.code == 0
        lines = out.stdout.splitlines()
        assert lines[0].split()[:4] == ["task", "phase", "repo", "idle"]
        assert world.cases["a_changing"] in out.stdout
        assert "lease agent-1" in out.stdout
        assert lines[-1] == "6 of 6 case(s) in 3 store(s); active"


class TestOverview:
    def test_totals_rates_and_repositories(self, world: World) -> None:
        data = world.beta("case", "overview").data
        assert data["stores"] == 3
        assert data["total"] == VISIBLE
        assert data["unreadable"] == 0
        assert {k: v for k, v in data["byPhase"].items() if v} == {
            "orienting": 2,
            "planned": 1,
            "changing": 1,
            "needs_human_decision": 1,
            "verifying": 1,
            "complete": 3,
            "abandoned": 1,
        }
        assert sum(data["byPhase"].values()) == VISIBLE
        assert (data["active"], data["closed"]) == (6, 4)
        assert data["waitingOnDecision"] == 1
        assert data["activeLeases"] == 2  # a_changing and b_verifying hold theirs
        assert data["stale"] == 0
        assert data["completion"] == {
            "complete": 3,
            "closed": 4,
            "readable": VISIBLE,
            "ofClosed": 0.75,
            "ofAll": 0.3,
        }
        assert data["verifiedCompletion"] == {
            "verified": 1,
            "acceptedFailed": 1,
            "verificationNotPossible": 1,
            "unknown": 0,
            "ofComplete": 0.3333,
        }
        repos = {r["repository"]: r for r in data["byRepo"]}
        assert all(r.pop("bytes") > 0 for r in data["byRepo"])
        assert repos["alpha"] | {"store": None} == {
            "store": None,
            "repository": "alpha",
            "total": 4,
            "active": 4,
            "complete": 0,
            "verifiedComplete": 0,
            "unreadable": 0,
        }
        assert (repos["beta"]["total"], repos["beta"]["active"]) == (4, 1)
        assert (repos["beta"]["complete"], repos["beta"]["verifiedComplete"]) == (2, 1)
        assert (repos["plain"]["total"], repos["plain"]["complete"]) == (2, 1)
        assert repos["plain"]["verifiedComplete"] == 0
        assert [r["total"] for r in data["byRepo"]] == [4, 4, 2]

    def test_from_a_repository_with_its_own_store(self, world: World) -> None:
        data = world.gamma("case", "overview").data
        assert data["total"] == VISIBLE + 1
        assert {"store": "configured", "total": 1}.items() <= next(
            r for r in data["byRepo"] if r["repository"] == "gamma"
        ).items()

    def test_human_output(self, world: World) -> None:
        out = world.alpha("case", "overview", human=True)
        assert out.code == 0
        text = " ".join(out.stdout.split())
        assert "completion 3 of 4 closed (75%); of all 10 (30%)" in text
        assert "verified completion 1 of 3 complete (33%)" in text


def test_a_registered_store_is_seen_from_everywhere(tmp_path: Path) -> None:
    """The first open into a configured store registers it: listings and readers anywhere find
    its cases; a registry entry naming a store that is gone, or garbage, is skipped."""
    env = base_env(tmp_path)
    state = Path(env["CORTEX_STATE_DIR"])
    own = make_repo(tmp_path / "own", env)
    (own / "cortex.toml").write_text('cases_dir = ".cortex/cases"\n')
    git(own, "add", "cortex.toml", env=env)
    git(own, "commit", "-q", "-m", "own store", env=env)
    other = make_repo(tmp_path / "other", env)
    task = Cli(env, own).open("Kept inside its repository")
    registry = state / "stores"
    (entry,) = registry.iterdir()
    assert entry.read_text() == str((own / ".cortex" / "cases").resolve()) + "\n"
    (registry / "gone").write_text(str(tmp_path / "deleted-store") + "\n")
    (registry / "garbage").write_bytes(b"relative/path\n")
    elsewhere = Cli(env, other)
    listed = elsewhere("case", "sessions").data
    assert [i["taskId"] for i in listed["items"]] == [task]
    assert elsewhere("case", "overview").data["total"] == 1
    shown = elsewhere("case", "show", task)
    assert shown.code == 0, shown.stdout
    assert shown.data["taskId"] == task
    # Reading from elsewhere is fine; writing still goes through the case's own workspace.
    refused = elsewhere("case", "note", task, "from the wrong place")
    assert (refused.code, refused.error_code) == (3, "not_found")
    before = tree_state(state)
    Cli(env, own).open("A second case: the store is registered already")
    assert tree_state(state / "stores") == {k[len("stores/") :]: v for k, v in before.items()
                                            if k.startswith("stores/")}  # fmt: skip


def _corrupt(world: World, name: str) -> tuple[Path, bytes]:
    path = case_path(world.env, world.cases[name]) / "case.json"
    original = path.read_bytes()
    path.write_bytes(b'{"schemaVersion": 1, "revision": "not a number"}\n')
    return path, original


class TestDamage:
    def test_a_damaged_case_is_listed_with_its_error(self, world: World) -> None:
        path, original = _corrupt(world, "a_planned")
        task = world.cases["a_planned"]
        try:
            out = world.alpha("case", "sessions")
            data = out.data
            assert data["total"] == VISIBLE
            first = data["items"][0]
            assert first["taskId"] == task
            assert first["error"]["code"] == "integrity_error"
            assert "case.json" in first["error"]["message"]
            assert first["store"]["id"] == _status(world, "a_open")["store"]["id"]
            # It cannot be shown not to match, so only the store filter leaves it out.
            assert task in {
                i["taskId"]
                for i in world.alpha("case", "sessions", "--query", "beta").data["items"]
            }
            beta = world.alpha("case", "sessions", "--repo", "beta").data["items"]
            assert task not in {i["taskId"] for i in beta}
            view = world.alpha("case", "overview").data
            assert view["unreadable"] == 1
            assert view["total"] == VISIBLE
            assert view["byPhase"]["planned"] == 0
            assert view["unreadableCases"][0]["taskId"] == task
            assert view["completion"]["readable"] == VISIBLE - 1
            human = world.alpha("case", "sessions", human=True)
            assert human.code == 0
            assert "unreadable" in human.stdout
            assert "Traceback" not in human.stdout + human.stderr
        finally:
            path.write_bytes(original)


BAD_INPUTS = [
    ("case", "sessions", "--stale-after", "24"),
    ("case", "sessions", "--stale-after", "24x"),
    ("case", "sessions", "--stale-after", "0s"),
    ("case", "sessions", "--stale-after", "366d"),
    ("case", "sessions", "--stale-after", "-5m"),
    ("case", "sessions", "--stale-after", ""),
    ("case", "sessions", "--limit", "0"),
    ("case", "sessions", "--limit", str(bounds.SESSIONS_LIMIT_MAX + 1)),
    ("case", "sessions", "--limit", "ten"),
    ("case", "sessions", "--query", ""),
    ("case", "sessions", "--query", "x" * (bounds.SESSIONS_QUERY_MAX + 1)),
    ("case", "sessions", "--repo", "   "),
    ("case", "sessions", "--active", "--active"),
    ("case", "sessions", "extra"),
    ("case", "sessions", "--act"),
    ("case", "overview", "--limit", "3"),
    ("case", "overview", "extra"),
]


class TestInput:
    @pytest.mark.parametrize("argv", BAD_INPUTS, ids=lambda argv: " ".join(argv[1:]))
    def test_bad_input_is_exit_4_with_one_envelope(
        self, world: World, argv: tuple[str, ...]
    ) -> None:
        out = world.alpha(*argv)
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert "Traceback" not in out.stdout + out.stderr

    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("90s", 90), ("15m", 900), ("24h", 86400), ("7d", 604800), ("365d", 365 * 86400)],
    )
    def test_durations(self, text: str, seconds: int) -> None:
        assert parse_duration(text) == seconds


def test_nothing_under_the_state_root_changes(world: World) -> None:
    """Every read, successful or refused, leaves every file as it was (and .git untouched)."""
    before = _snapshot(world)
    for cli in (world.alpha, world.beta, world.gamma):
        for argv in (
            ("case", "sessions"),
            ("case", "sessions", "--active", "--stale-after", "1s"),
            ("case", "overview"),
            ("case", "sessions", "--limit", "0"),
        ):
            cli(*argv)
            cli(*argv, human=True)
    later = time.time() + 3 * 86400
    kernel = Kernel(str(world.roots["beta"]), world.env, default_actor="t", clock=lambda: later)
    sessions(kernel, stale_after="1d", limit=bounds.SESSIONS_LIMIT_MAX)
    overview(kernel)
    assert _snapshot(world) == before


def test_envelopes_are_plain_json(world: World) -> None:
    for argv in (("case", "sessions"), ("case", "overview")):
        out = world.alpha(*argv)
        assert json.loads(out.stdout)["command"] == "case." + argv[1]
