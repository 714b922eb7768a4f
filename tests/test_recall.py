"""Recall end to end: what one case learned reaches the next (docs/design/recall.md).

Cards come from real cases through the CLI; `cortex recall` finds them with exact totals,
filters, pages and budgets; `recall get` reads whole records, all or none; the index follows
every commit that changes cards, says when it is behind, and `reindex`/`rebuild --verify`
repair and prove it. Hostile queries get a plain search or a bounded refusal, never an engine
error. The brief at `case open` and the plan's warning are here too; decision history and
contests have tests/test_recall_history.py.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, configure_verifiers, git, ready_to_verify

SECRET_CLAIM = "SENSITIVE-RECALL-MARKER the vault answers on 8200"  # noqa: S105 - made up


def data(out: Outcome) -> Any:
    assert out.code == 0, (out.stdout, out.stderr)
    return out.data


def evidence(cli: Cli, task: str, claim: str, *extra: str) -> str:
    """Add evidence; its id."""
    found: str = data(cli("case", "evidence", "add", task, "--claim", claim, *extra))["evidence"][
        "id"
    ]
    return found


def hypotheses(cli: Cli, task: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = data(cli("case", "show", task))["hypotheses"]
    return found


def finished_case(cli: Cli, env: dict[str, str], repo: Path) -> dict[str, str]:
    """A case with every kind of card: two resolved hypotheses, a decision, an outcome, notable
    evidence (one sensitive), completed on a verified run. Returns the ids."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('1 passed')"]})
    task = cli.open("Fix the checkout redirect")
    ids = {"task": task}
    ids["located"] = evidence(
        cli, task, "resolve_return_url drops return_to", "--file", "app.py", "--confidence", "high"
    )
    ids["secret"] = evidence(cli, task, SECRET_CLAIM, "--confidence", "high", "--sensitive")
    ids["ordinary"] = evidence(cli, task, "an ordinary observation nobody flagged")
    plan = ["case", "plan", task, "--uncertainty", "none", "--file", "app.py"]
    plan += ["--hypothesis", "the session cache drops return_to :: a cold cache keeps it"]
    plan += ["--hypothesis", "the callback rewrites return_to :: the callback leaves it alone"]
    plan += ["--support", f"1={ids['located']}", "--boundary-reason", "there", "--verify", "unit"]
    plan = [*plan[:-1], "command:unit"]
    data(cli(*plan))
    first, second = (h["id"] for h in hypotheses(cli, task))
    ids["rejected"], ids["confirmed"] = first, second
    cite = ["--evidence", ids["located"]]
    data(cli("case", "resolve", task, first, "--status", "rejected", "--reason", "cold too", *cite))
    data(cli("case", "resolve", task, second, "--status", "confirmed", "--reason", "seen", *cite))
    asked = cli(
        "case", "decision", "request", task, "--question", "Which redirect store?",
        "--option", "cookie=Signed cookie", "--option", "session=Server session",
        "--option", "query=Query string", "--subject", "redirect store",
    )  # fmt: skip
    ids["decision"] = data(asked)["decision"]["id"]
    data(cli("case", "decision", "answer", task, ids["decision"], "--answer", "cookie",
             "--responder", "alice"))  # fmt: skip
    data(cli("case", "begin-change", task, "--actor", "agent-1"))
    (repo / "app.py").write_text("print('fixed')\n")
    verifier = Cli({**env, "CORTEX_APPROVE_COMMANDS": "1"}, repo)
    data(verifier("case", "verify", task))
    data(cli("case", "complete", task, "--outcome", "return_to survives the callback"))
    git(repo, "commit", "-qam", "fix", env=env)
    return ids


def recall(cli: Cli, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = data(cli("recall", *args))
    return found


def by_id(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {card["id"]: card for card in answer["cards"]}


def index_file(answer: dict[str, Any]) -> Path:
    return Path(answer["index"]["path"])


class TestCards:
    @pytest.mark.process
    def test_a_finished_case_leaves_one_card_per_thing_it_learned(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        ids = finished_case(cli, env, repo)
        found = by_id(recall(cli, "return_to redirect callback session cookie", "--limit", "50"))
        rejected = found[ids["rejected"]]
        assert (rejected["kind"], rejected["status"]) == ("hypothesis", "rejected")
        # The evidence that decided it is cited, with its claim.
        assert ids["located"] in rejected["text"]
        assert "resolve_return_url drops return_to" in rejected["text"]
        assert rejected["paths"][0]["path"] == "app.py"
        assert found[ids["confirmed"]]["status"] == "confirmed"
        decision = found[ids["decision"]]
        assert decision["status"] == "active"
        assert decision["subject"] == "redirect store"
        assert "Chose cookie: Signed cookie" in decision["text"]
        assert (
            "already rejected: Server session (session), Query string (query)" in (decision["text"])
        )
        outcome = found[ids["task"]]
        assert (outcome["kind"], outcome["status"]) == ("outcome", "verified")
        assert "return_to survives the callback" in outcome["text"]
        assert found[ids["located"]]["kind"] == "evidence"
        assert ids["ordinary"] not in found
        # What verify wrote is the outcome card's business, not a card of its own.
        assert recall(cli, "passed exited unit")["total"] == 0
        for card in found.values():
            assert card["taskId"] == ids["task"]
            assert card["repository"] == "repo"
            assert card["estTokens"] == -(
                -len(" ".join([card["id"], card["text"], *card["labels"]])) // 4
            )
            assert len(card["text"]) <= 480
            assert len(card["title"]) <= 200

    @pytest.mark.process
    def test_sensitive_records_are_never_indexed(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        ids = finished_case(cli, env, repo)
        answer = recall(cli, "vault answers 8200 sensitive recall marker")
        assert answer["total"] == 0
        assert ids["secret"] not in index_file(answer).read_bytes().decode("latin-1")
        assert b"SENSITIVE-RECALL-MARKER" not in index_file(answer).read_bytes()
        got = cli("recall", "get", ids["secret"])
        assert got.code == 3

    @pytest.mark.process
    def test_get_returns_whole_records_all_or_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        ids = finished_case(cli, env, repo)
        wanted = [ids["rejected"], ids["decision"], ids["located"], ids["task"]]
        got = data(cli("recall", "get", *wanted))
        records = {item["id"]: item["record"] for item in got["records"]}
        assert list(records) == wanted
        assert records[ids["rejected"]]["history"][-1]["reason"] == "cold too"
        assert records[ids["rejected"]]["evidence"][0]["id"] == ids["located"]
        assert records[ids["decision"]]["alreadyRejected"] == [
            {"id": "session", "label": "Server session"},
            {"id": "query", "label": "Query string"},
        ]
        assert records[ids["located"]]["claim"] == "resolve_return_url drops return_to"
        assert "## Verification: verified" in records[ids["task"]]["summary"]
        missing = "ev_" + "0" * 26
        out = cli("recall", "get", ids["rejected"], missing)
        assert out.code == 3
        assert out.error_code == "not_found"
        assert out.envelope["data"] is None
        assert missing in out.envelope["error"]["message"]
        assert cli("recall", "get", *[ids["rejected"]] * 101).code == 4
        assert cli("recall", "get", "not-an-id").code == 4
        # `recall get` is the subcommand; a query that is the word itself needs `--`.
        plain = cli("--json", "recall", "--", "get", human=True)
        assert data(plain)["terms"] == ["get"]


class TestSearch:
    @pytest.fixture
    def many(self, cli: Cli) -> tuple[str, list[str]]:
        """One case with 23 notable evidence records sharing the word 'checkout'."""
        task = cli.open("Seed the index")
        made = [
            evidence(cli, task, f"checkout step {n} {'redirect ' * (n % 4)}fails", "--confidence",
                     "high")
            for n in range(23)
        ]  # fmt: skip
        return task, made

    def test_totals_are_exact_and_pages_walk_everything_once(
        self, cli: Cli, many: tuple[str, list[str]]
    ) -> None:
        _, made = many
        first = recall(cli, "checkout redirect", "--limit", "10")
        assert (first["total"], first["returned"]) == (23, 10)
        seen = [card["id"] for card in first["cards"]]
        cursor = first["nextCursor"]
        while cursor:
            page = recall(cli, "checkout redirect", "--limit", "10", "--cursor", cursor)
            assert page["total"] == 23
            seen += [card["id"] for card in page["cards"]]
            cursor = page["nextCursor"]
        assert sorted(seen) == sorted(made)
        assert len(seen) == len(set(seen)) == 23
        # The best match first: the most 'redirect's, then ties by id.
        scores = [(-card["score"], card["id"]) for card in first["cards"]]
        assert scores == sorted(scores)
        other = cli("recall", "checkout", "--cursor", first["nextCursor"])
        assert other.code == 4
        assert "another query" in other.envelope["error"]["message"]
        assert cli("recall", "checkout", "--limit", "101").code == 4
        assert cli("recall", "checkout", "--limit", "0").code == 4

    @pytest.mark.process
    def test_filters(self, cli: Cli, env: dict[str, str], repo: Path) -> None:
        ids = finished_case(cli, env, repo)
        words = "return_to redirect callback session cookie"
        only = recall(cli, words, "--kind", "hypothesis", "--status", "rejected")
        assert [card["id"] for card in only["cards"]] == [ids["rejected"]]
        assert recall(cli, words, "--repo", "repo")["total"] > 0
        assert recall(cli, words, "--repo", "REPO")["total"] > 0, "names ignore case"
        assert recall(cli, words, "--repo", "another")["total"] == 0
        assert recall(cli, words, "--since", "2999-01-01")["total"] == 0
        assert recall(cli, words, "--until", "2000-01-01")["total"] == 0
        assert recall(cli, words, "--since", "2000-01-01")["total"] > 0
        bad = cli("recall", words, "--kind", "hunch")
        assert bad.code == 4
        assert "--kind" in bad.envelope["error"]["message"]

    @pytest.mark.usefixtures("many")
    def test_a_budget_keeps_the_top_card_and_counts_what_it_skips(self, cli: Cli) -> None:
        whole = recall(cli, "checkout redirect", "--limit", "20")
        tiny = recall(cli, "checkout redirect", "--limit", "20", "--budget", "1")
        assert [card["id"] for card in tiny["cards"]] == [whole["cards"][0]["id"]]
        assert tiny["budget"] == {
            "tokens": 1,
            "used": whole["cards"][0]["estTokens"],
            "skipped": 19,
            "skippedIds": [card["id"] for card in whole["cards"][1:]],
            "truncated": True,
        }
        cost = [card["estTokens"] for card in whole["cards"]]
        budget = cost[0] + cost[1] + 1
        some = recall(cli, "checkout redirect", "--limit", "20", "--budget", str(budget))
        assert some["budget"]["used"] <= budget
        assert sum(card["estTokens"] for card in some["cards"]) == some["budget"]["used"]
        assert some["budget"]["skipped"] == 20 - len(some["cards"])
        roomy = recall(cli, "checkout redirect", "--limit", "20", "--budget", "100000")
        assert roomy["budget"]["truncated"] is False
        assert cli("recall", "checkout", "--budget", "0").code == 4
        # The rendered page: one line per card, exactly the text estTokens counts.
        text = cli("recall", "checkout redirect", "--limit", "20", "--budget", str(budget),
                   human=True).stdout  # fmt: skip
        lines = [line for line in text.splitlines() if line.startswith("ev_")]
        assert len(lines) == len(some["cards"])
        assert sum(-(-len(line) // 4) for line in lines) <= budget
        assert "truncated" in text

    @pytest.mark.parametrize(
        "query",
        ["NEAR(checkout", '"checkout', "checkout*", "claim:checkout", "checkout AND NOT x",
         "^checkout", "{checkout}", "checkout OR", "'; DROP TABLE cards; --"],
    )  # fmt: skip
    @pytest.mark.usefixtures("many")
    def test_query_syntax_is_a_plain_search(self, cli: Cli, query: str) -> None:
        out = cli("recall", query)
        assert out.code == 0, out.stdout
        assert "checkout" in out.data["terms"] or out.data["terms"][0] == "drop"

    @pytest.mark.parametrize(
        ("query", "why"),
        [("***", "no searchable term"), ("", "no searchable term"), ("a\x00b", "control"),
         (" ".join(f"w{n}" for n in range(10_000)), "bytes"),
         (" ".join(f"w{n}" for n in range(100)), "distinct terms"),
         ("x" * 5000, "bytes")],
        ids=["punctuation", "empty", "nul", "10k-terms", "100-terms", "long"],
    )  # fmt: skip
    @pytest.mark.usefixtures("many")
    def test_hostile_queries_are_refused_within_bounds(
        self, cli: Cli, query: str, why: str
    ) -> None:
        out = cli("recall", query)
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert why in out.envelope["error"]["message"]

    def test_over_mcp_the_same_refusal_names_the_argument(self, cli: Cli) -> None:
        from cortex.kernel.kernel import Kernel
        from cortex.kernel.surface import execute, in_kernel
        from cortex.mcp.session import Leases
        from cortex.mcp.tools import BY_NAME, decode_args, spelling

        tool = BY_NAME["cortex_recall"]
        arguments = decode_args(tool, {"query": "a\x00b", "limit": 5})

        def use_case(kernel: Kernel) -> Any:
            return tool.call(kernel, arguments, Leases())

        body = in_kernel(str(cli.cwd), cli.env, "mcp", use_case)
        envelope, status = execute("recall", body, env=cli.env, spelling=spelling(tool))
        assert status == 4
        assert envelope.error is not None
        assert envelope.error.message.startswith("query must not")


class TestIndex:
    def test_without_an_index_recall_says_so_and_reindex_builds_it(self, cli: Cli) -> None:
        task = cli.open("Nothing learned yet", "--no-recall")
        answer = recall(cli, "anything")
        assert answer["index"]["state"] == "missing"
        assert answer["total"] == 0
        assert [a["command"] for a in cli("recall", "anything").envelope["actions"]] == [
            "cortex recall reindex"
        ]
        built = data(cli("recall", "reindex"))
        assert built["done"] == "built"
        again = data(cli("recall", "reindex"))
        assert (again["done"], again["updated"], again["removed"]) == ("reindexed", [], [])
        evidence(cli, task, "flagged by a reviewer", "--origin", "reviewer")
        assert recall(cli, "reviewer flagged")["index"]["state"] == "current"

    @pytest.mark.process
    def test_reindex_is_idempotent_and_rebuild_verifies(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        finished_case(cli, env, repo)
        first = data(cli("recall", "reindex"))
        second = data(cli("recall", "reindex"))
        assert second["updated"] == []
        assert second["removed"] == []
        assert first["canonicalDigest"] == second["canonicalDigest"]
        proof = data(cli("recall", "rebuild", "--verify"))["verify"]
        assert proof["agree"] is True
        assert proof["previousAgreed"] is True, "updates after each commit equal a full rebuild"
        assert proof["canonicalDigest"] == second["canonicalDigest"]
        # Tamper with the index behind its back: the next verify says the old one disagreed.
        db = sqlite3.connect(first["path"])
        db.execute("UPDATE bodies SET card = replace(card, 'cold too', 'warm')")
        db.execute("UPDATE cases SET digest = 'x' WHERE 1")
        db.commit()
        db.close()
        again = data(cli("recall", "rebuild", "--verify"))["verify"]
        assert again["previousAgreed"] is False
        assert again["agree"] is True

    def test_a_damaged_index_file_is_rebuilt_by_the_next_write(self, cli: Cli) -> None:
        task = cli.open("Damage")
        evidence(cli, task, "first notable", "--confidence", "high")
        path = index_file(recall(cli, "notable"))
        path.write_bytes(b"not a database at all" * 100)
        out = cli("recall", "notable")
        assert out.code in {0, 1, 4}
        assert "Traceback" not in out.stderr
        evidence(cli, task, "second notable", "--confidence", "high")
        assert recall(cli, "notable")["total"] == 2

    @pytest.mark.process
    def test_without_fts5_the_python_engine_answers_the_same(
        self, cli: Cli, env: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The probe says no FTS5: a bm25py index is built beside, and answers identically."""
        from cortex.recall import index as recall_index

        finished_case(cli, env, repo)
        words = ["return_to redirect callback session cookie", "cookie", "oauth nothing"]
        with_fts = [recall(cli, w, "--limit", "20") for w in words]
        assert with_fts[0]["index"]["engine"] == "fts5"
        monkeypatch.setattr(recall_index, "_probed", False)
        assert recall(cli, "cookie")["index"]["state"] == "missing", "a file per engine"
        data(cli("recall", "reindex"))
        without = [recall(cli, w, "--limit", "20") for w in words]
        assert without[0]["index"]["engine"] == "bm25py"
        assert without[0]["index"]["path"].endswith("-bm25py.sqlite")
        for fts, python in zip(with_fts, without, strict=True):
            assert (fts["total"], fts["cards"]) == (python["total"], python["cards"])

    def test_an_index_that_cannot_be_written_never_fails_the_commit(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        blocked = tmp_path / "not-a-directory"
        blocked.write_text("a file where the cache root should be\n")
        broken = Cli({**env, "CORTEX_CACHE_DIR": str(blocked)}, repo)
        task = broken.open("Cache gone", "--no-recall")
        out = data(broken("case", "evidence", "add", task, "--claim", "notable", "--confidence",
                          "high"))  # fmt: skip
        assert any("recall index was not updated" in w for w in out["warnings"])
        assert "recall reindex" in out["warnings"][0]
        assert data(broken("case", "status", task))["counts"]["evidence"] == 1
        refused = broken("recall", "reindex")
        assert refused.code == 1
        assert "cannot make" in refused.envelope["error"]["message"]
        assert "Traceback" not in refused.stderr
        # The cases are whole: an index anywhere else is built from them.
        assert recall(cli, "notable")["index"]["state"] == "missing"
        data(cli("recall", "reindex"))
        assert recall(cli, "notable")["total"] == 1

    def test_ordinary_commits_leave_the_index_current(self, cli: Cli) -> None:
        task = cli.open("Keep current")
        evidence(cli, task, "flagged", "--confidence", "high")
        data(cli("case", "note", task, "just a note"))
        evidence(cli, task, "plain observation")
        answer = recall(cli, "flagged")
        assert answer["index"]["state"] == "current"
        assert answer["total"] == 1


class TestBrief:
    @pytest.mark.process
    def test_the_brief_is_bounded_and_puts_what_was_ruled_out_first(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        ids = finished_case(cli, env, repo)
        for n in range(8):
            noisy = cli.open(f"Unrelated {n}", "--no-recall")
            long = f"checkout redirect session cookie callback note {n} " + "detail " * 60
            evidence(cli, noisy, long, "--confidence", "high")
        opened = data(cli("case", "open", "Fix the checkout redirect session cookie again"))
        brief = opened["brief"]
        cards = brief["cards"]
        assert 1 <= len(cards) <= 5
        assert sum(card["estTokens"] for card in cards) == brief["tokens"] <= 400
        assert cards[0]["id"] in {ids["rejected"], ids["decision"]}
        first_group = {card["id"] for card in cards[:2]}
        assert first_group == {ids["rejected"], ids["decision"]}
        assert all(card["taskId"] != opened["taskId"] for card in cards)
        assert brief["considered"] is None or brief["considered"] >= len(cards)
        text = cli("case", "open", "Fix the checkout redirect session cookie again",
                   human=True).stdout  # fmt: skip
        lines = [
            line.strip() for line in text.splitlines() if line.startswith("  ") and "_" in line[:8]
        ]
        assert lines, text
        assert sum(-(-len(line) // 4) for line in lines) <= 400

    def test_the_top_card_is_kept_even_when_it_alone_is_over_budget(self, cli: Cli) -> None:
        task = cli.open("Seed")
        for n in range(7):
            evidence(cli, task, f"payment webhook retries {n} " + "x" * 470, "--confidence", "high")
        brief = data(cli("case", "open", "payment webhook retries"))["brief"]
        assert brief["returned"] >= 1
        assert brief["tokens"] <= 400 or brief["returned"] == 1
        assert brief["truncated"] is True
        assert brief["returned"] + brief["skipped"] == 7

    def test_the_brief_can_be_turned_off(self, cli: Cli, env: dict[str, str], repo: Path) -> None:
        task = cli.open("Seed")
        evidence(cli, task, "payment webhook retries", "--confidence", "high")
        assert data(cli("case", "open", "payment webhook", "--no-recall"))["brief"] is None
        (repo / "cortex.toml").write_text("recall_brief = false\n")
        assert data(cli("case", "open", "payment webhook"))["brief"] is None
        (repo / "cortex.toml").unlink()
        quiet = Cli({**env, "CORTEX_RECALL_BRIEF": "off"}, repo)
        assert data(quiet("case", "open", "payment webhook"))["brief"] is None
        assert data(cli("case", "open", "payment webhook"))["brief"]["returned"] == 1
        bad = Cli({**env, "CORTEX_RECALL_BRIEF": "perhaps"}, repo)
        assert bad("case", "open", "payment webhook").error_code == "config_error"


class TestPlanWarning:
    @pytest.mark.process
    def test_a_plan_repeating_a_rejected_hypothesis_is_warned_and_committed(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        ids = finished_case(cli, env, repo)
        task = ready_to_verify(cli, verify=("scope",))
        plan = data(
            cli("case", "plan", task, "--reason", "try again", "--uncertainty", "some",
                "--hypothesis", "The session cache drops the return_to! :: restart it",
                "--hypothesis", "the database is down :: ping it",
                "--file", "app.py", "--boundary-reason", "there", "--verify", "scope",
                "--actor", "agent-1")
        )  # fmt: skip
        assert plan["planRevision"] == 2
        assert [m["hypothesis"] for m in plan["rejectedBefore"]] == [1]
        match = plan["rejectedBefore"][0]
        assert match["card"]["id"] == ids["rejected"]
        assert match["card"]["taskId"] == ids["task"]
        assert len(plan["warnings"]) == 1
        assert ids["rejected"] in plan["warnings"][0]
        assert ids["task"] in plan["warnings"][0]
        assert "cold too" in plan["warnings"][0]


@pytest.mark.process
def test_the_per_call_path_of_evidence_with_a_file_stays_light(cli: Cli, task: str) -> None:
    """`evidence add --file` records the blob and HEAD in Python: no git, no sqlite3."""
    import subprocess

    probe = (
        "import io, sys\n"
        "from cortex.main import main\n"
        f"argv = ['case', 'evidence', 'add', {task!r}, '--claim', 'x', '--file', 'app.py', "
        "'--json']\n"
        "assert main(argv, stdout=io.StringIO()) == 0\n"
        "sys.stdout.write(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    loaded = set(proc.stdout.decode().split())
    assert not loaded & {"subprocess", "sqlite3", "_sqlite3", "hashlib", "cortex.recall.index"}
