"""The CLI contract: one envelope, semantic exit codes, strict options, bounds, hostile input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli, case_path, run_cortex, tree_state

from cortex.cases import bounds

ENVELOPE_KEYS = {"schema", "ok", "command", "data", "error"}


def check_envelope(envelope: dict[str, object], command: str) -> None:
    extra = set(envelope) - ENVELOPE_KEYS - {"actions"}
    assert not extra, f"unexpected top-level fields {extra}"
    assert set(envelope) >= ENVELOPE_KEYS
    assert envelope["schema"] == "cortex/v1"
    assert envelope["command"] == command


class TestEnvelope:
    def test_open_answers_with_one_envelope(self, cli: Cli) -> None:
        """`case open --json` prints exactly one envelope with the new case and next actions."""
        out = cli("case", "open", "Fix the checkout redirect")
        envelope = out.envelope
        check_envelope(envelope, "case.open")
        assert envelope["ok"] is True
        assert envelope["error"] is None
        data = out.data
        assert data["taskId"].startswith("task_")
        assert data["created"] is True
        assert data["revision"] == 1
        assert data["status"] == "orienting"
        assert data["workspace"]["kind"] == "git"
        assert data["workspace"]["branch"] == "main"
        assert len(data["workspace"]["commitBefore"]) == 40
        commands = [a["command"] for a in envelope["actions"]]
        assert f"cortex case status {data['taskId']}" in commands

    def test_every_command_has_the_same_envelope(self, cli: Cli, task: str) -> None:
        """Every command, success or failure, keeps the same top-level fields."""
        ev = cli("case", "evidence", "add", task, "--claim", "a finding").data["evidence"]["id"]
        runs = {
            "case.status": cli("case", "status", task),
            "case.list": cli("case", "list"),
            "case.evidence.add": cli("case", "evidence", "add", task, "--claim", "more"),
            "case.note": cli("case", "note", task, "a note"),
            "case.read-evidence": cli("case", "read-evidence", task, ev),
            "case.audit": cli("case", "audit", task),
        }
        for command, out in runs.items():
            assert out.code == 0, out.stdout
            check_envelope(out.envelope, command)
        failing = cli("case", "status", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV")
        check_envelope(failing.envelope, "case.status")
        assert failing.envelope["data"] is None

    def test_human_output_is_text_not_json(self, cli: Cli, task: str) -> None:
        """Without --json a person gets readable text naming the case."""
        out = cli("case", "status", task, human=True)
        assert out.code == 0
        assert task in out.stdout
        assert not out.stdout.lstrip().startswith("{")

    def test_human_errors_go_to_stderr(self, cli: Cli) -> None:
        """A failure without --json prints the error on stderr and keeps the exit code."""
        out = cli("case", "status", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV", human=True)
        assert out.code == 3
        assert "not_found" in out.stderr

    def test_claims_are_not_rich_markup(self, cli: Cli, task: str) -> None:
        """Stored text is printed as written, never interpreted as markup."""
        ev = cli("case", "evidence", "add", task, "--claim", "[red]x[/red] and [bold]").data
        out = cli("case", "read-evidence", task, ev["evidence"]["id"], human=True)
        assert "[red]x[/red] and [bold]" in out.stdout


class TestExitCodes:
    def test_not_found_is_3(self, cli: Cli) -> None:
        """An unknown case is exit 3 with not_found."""
        out = cli("case", "status", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV")
        assert out.code == 3
        assert out.error_code == "not_found"

    def test_unknown_evidence_is_3(self, cli: Cli, task: str) -> None:
        """An unknown evidence id is exit 3."""
        out = cli("case", "read-evidence", task, "ev_01ARZ3NDEKTSV4RRFFQ69G5FAV")
        assert out.code == 3

    def test_stale_expected_revision_is_6(self, cli: Cli, task: str) -> None:
        """--expect-revision that no longer holds is a retryable conflict, and writes nothing."""
        out = cli("case", "note", task, "first", "--expect-revision", "1")
        assert out.data["revision"] == 2
        stale = cli("case", "note", task, "second", "--expect-revision", "1")
        assert stale.code == 6
        assert stale.error_code == "revision_conflict"
        assert cli("case", "status", task).data["counts"]["evidence"] == 1

    def test_internal_errors_are_1_without_traceback(
        self, cli: Cli, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An unexpected exception becomes exit 1 with an envelope, never a traceback."""
        from cortex.kernel.views import status as status_module

        def boom(*_args: object, **_kwargs: object) -> object:
            msg = "injected fault"
            raise RuntimeError(msg)

        monkeypatch.setattr(status_module, "status", boom)
        out = cli("case", "status", task)
        assert out.code == 1
        assert out.error_code == "internal_error"
        assert "Traceback" not in out.stdout + out.stderr


class TestStrictOptions:
    @pytest.mark.parametrize(
        "args",
        [
            ["case", "evidence", "add", "TASK", "--claim", "x", "--bogus"],
            ["case", "evidence", "add", "TASK", "--claim", "x", "--claim", "y"],
            ["case", "evidence", "add", "TASK", "--claim"],
            ["case", "evidence", "add", "TASK", "--claim", "--json"],
            ["case", "evidence", "add", "TASK"],
            ["case", "evidence", "add", "TASK", "--clai", "x"],
            ["case", "status", "TASK", "extra"],
            ["case", "status"],
            ["case", "status", "TASK", "--mode", "change"],
            ["case", "list", "--limit", "many"],
            ["case", "frobnicate"],
            ["case"],
            ["case", "note", "TASK", "text", "--sensitive"],
            ["case", "list", "--json", "--json"],
            ["-C", ".", "case", "list", "-C", "."],
        ],
    )
    def test_bad_command_lines_are_exit_4_with_an_envelope(
        self, cli: Cli, task: str, state_root: Path, args: list[str]
    ) -> None:
        """Unknown, duplicate, abbreviated, missing or inapplicable options: exit 4, no write."""
        argv = [task if a == "TASK" else a for a in args]
        before = tree_state(state_root)
        out = cli(*argv, human=True) if "--json" in argv else cli(*argv)
        assert out.code == 4, out.stdout + out.stderr
        assert out.error_code == "invalid_input"
        assert tree_state(state_root) == before

    def test_values_may_start_with_a_dash(self, cli: Cli, task: str) -> None:
        """A value that is not an option of the command is taken as a value."""
        out = cli("case", "evidence", "add", task, "--claim", "-1 is returned on error")
        assert out.data["evidence"]["claim"] == "-1 is returned on error"

    def test_double_dash_ends_options(self, cli: Cli, task: str) -> None:
        """After --, arguments are positional even when they look like options."""
        out = cli("case", "note", task, "--json", "--", "--looks-like-an-option", human=True)
        assert out.data["evidence"]["claim"] == "--looks-like-an-option"

    def test_help_and_version_exit_0(self, cli: Cli) -> None:
        """--help and --version print and succeed."""
        out = cli("case", "evidence", "add", "--help", human=True)
        assert out.code == 0
        assert "--claim" in out.stdout
        version = cli("--version", human=True)
        assert version.code == 0
        assert version.stdout.startswith("cortex ")


class TestIdempotentOpen:
    def test_a_retry_with_the_same_key_returns_the_same_case(self, cli: Cli) -> None:
        """The same key and request give the same case, created once."""
        first = cli("case", "open", "Ship it", "--idempotency-key", "run-42").data
        second = cli("case", "open", "Ship it", "--idempotency-key", "run-42").data
        assert first["taskId"] == second["taskId"]
        assert first["created"] is True
        assert second["created"] is False
        assert cli("case", "list").data["total"] == 1

    def test_a_key_reused_for_another_request_is_refused(self, cli: Cli) -> None:
        """A key bound to one request cannot open a different case."""
        cli("case", "open", "Ship it", "--idempotency-key", "run-43")
        out = cli("case", "open", "Something else", "--idempotency-key", "run-43")
        assert out.code == 4
        assert cli("case", "list").data["total"] == 1


class TestBounds:
    @pytest.mark.parametrize(
        ("args", "limit"),
        [
            (["case", "open", "G"], bounds.GOAL_MAX),
            (["case", "evidence", "add", "TASK", "--claim", "G"], bounds.CLAIM_MAX),
            (["case", "note", "TASK", "G"], bounds.NOTE_MAX),
            (
                ["case", "evidence", "add", "TASK", "--claim", "x", "--symbol", "G"],
                bounds.SYMBOL_MAX,
            ),
            (["case", "evidence", "add", "TASK", "--claim", "x", "--uri", "G"], bounds.URI_MAX),
            (["case", "open", "x", "--criterion", "c=G"], bounds.CRITERION_STATEMENT_MAX),
            (["case", "open", "x", "--actor", "G"], bounds.IDENTIFIER_MAX),
        ],
    )
    def test_one_byte_over_a_bound_is_refused(
        self, cli: Cli, task: str, state_root: Path, args: list[str], limit: int
    ) -> None:
        """At the limit is fine (for text), one byte more is exit 4 and writes nothing."""
        over = "a" * (limit + 1)
        argv = [task if a == "TASK" else a.replace("G", over) if "G" in a else a for a in args]
        before = tree_state(state_root)
        out = cli(*argv)
        assert out.code == 4, out.stdout
        assert tree_state(state_root) == before

    def test_claim_at_the_limit_is_accepted(self, cli: Cli, task: str) -> None:
        """A claim of exactly CLAIM_MAX bytes is stored whole."""
        claim = "é" * (bounds.CLAIM_MAX // 2)
        out = cli("case", "evidence", "add", task, "--claim", claim)
        assert out.data["evidence"]["claim"] == claim

    def test_too_many_criteria_are_refused(self, cli: Cli) -> None:
        """More than CRITERIA_MAX acceptance criteria: exit 4."""
        args = [f"--criterion=c{i}=statement {i}" for i in range(bounds.CRITERIA_MAX + 1)]
        assert cli("case", "open", "x", *args).code == 4

    def test_oversize_raw_from_stdin_is_refused(
        self, cli: Cli, task: str, state_root: Path
    ) -> None:
        """A raw blob one byte over RAW_BLOB_MAX is refused before anything is written."""
        before = tree_state(state_root)
        out = cli(
            "case",
            "evidence",
            "add",
            task,
            "--claim",
            "x",
            "--raw-file",
            "-",
            stdin=b"a" * (bounds.RAW_BLOB_MAX + 1),
        )
        assert out.code == 4
        assert tree_state(state_root) == before


class TestHostileInput:
    @pytest.mark.parametrize(
        "task_id",
        [
            "../../etc/passwd",
            "task_../../x",
            "/etc/passwd",
            "task_01ARZ3NDEKTSV4RRFFQ69G5FA\x00",
            "task_01arz3ndektsv4rrffq69g5fav",
            "TASK_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "task_81ARZ3NDEKTSV4RRFFQ69G5FAV",
            "task/01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "task_01ARZ3NDEKTSV4RRFFQ69G5FAVX",
            "",
        ],
    )
    @pytest.mark.usefixtures("task")
    def test_malformed_task_ids_are_refused_not_rewritten(
        self, cli: Cli, state_root: Path, task_id: str
    ) -> None:
        """Traversal, absolute, NUL, wrong case, overflow: exit 4 before any path is built."""
        before = tree_state(state_root)
        for args in (
            ["case", "status", task_id],
            ["case", "evidence", "add", task_id, "--claim", "x"],
            ["case", "audit", task_id],
        ):
            out = cli(*args)
            assert out.code == 4, (args, out.stdout)
        assert tree_state(state_root) == before

    @pytest.mark.parametrize(
        "path",
        [
            "/etc/passwd",
            "../outside.py",
            "src/../../x",
            "a//b",
            "./a",
            "a\\b",
            "a\x00b",
            "a\nb",
            "C:x",
        ],
    )
    def test_unsafe_location_paths_are_refused(
        self, cli: Cli, task: str, state_root: Path, path: str
    ) -> None:
        """--file must be a clean repository-relative path."""
        before = tree_state(state_root)
        out = cli("case", "evidence", "add", task, "--claim", "x", "--file", path)
        assert out.code == 4
        assert tree_state(state_root) == before

    @pytest.mark.parametrize("text", ["nul\x00byte", "escape \x1b[31mred", "bell\x07"])
    def test_control_characters_in_text_are_refused(
        self, cli: Cli, task: str, state_root: Path, text: str
    ) -> None:
        """NUL and terminal control codes are refused in free text."""
        before = tree_state(state_root)
        assert cli("case", "note", task, text).code == 4
        assert tree_state(state_root) == before

    def test_a_symlinked_case_directory_is_refused(
        self, cli: Cli, env: dict[str, str], task: str, tmp_path: Path
    ) -> None:
        """A case directory replaced by a symlink is never followed, for reads or writes."""
        real = case_path(env, task)
        elsewhere = tmp_path / "elsewhere"
        real.rename(elsewhere)
        real.symlink_to(elsewhere, target_is_directory=True)
        before = tree_state(elsewhere)
        for args in (
            ["case", "status", task],
            ["case", "evidence", "add", task, "--claim", "x"],
            ["case", "audit", task],
        ):
            out = cli(*args)
            assert out.code == 4, (args, out.stdout)
            assert out.error_code == "integrity_error"
        assert tree_state(elsewhere) == before

    def test_a_symlinked_ledger_is_refused(
        self, cli: Cli, env: dict[str, str], task: str, tmp_path: Path
    ) -> None:
        """A ledger replaced by a symlink is refused, and its target is not written."""
        path = case_path(env, task) / "evidence.jsonl"
        target = tmp_path / "target.jsonl"
        target.write_bytes(b"")
        path.unlink()
        path.symlink_to(target)
        out = cli("case", "evidence", "add", task, "--claim", "x")
        assert out.code == 4
        assert target.read_bytes() == b""

    def test_raw_file_must_be_a_regular_file(self, cli: Cli, task: str, tmp_path: Path) -> None:
        """A FIFO, a directory or a missing file is refused without blocking."""
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        for path in (str(fifo), str(tmp_path), str(tmp_path / "missing")):
            out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", path)
            assert out.code == 4, path

    def test_derived_from_must_name_evidence_of_this_case(self, cli: Cli, task: str) -> None:
        """A dangling or foreign --derived-from id is refused."""
        other = cli.open("another task")
        foreign = cli("case", "evidence", "add", other, "--claim", "x").data["evidence"]["id"]
        out = cli("case", "evidence", "add", task, "--claim", "y", "--derived-from", foreign)
        assert out.code == 3
        own = cli("case", "evidence", "add", task, "--claim", "z").data["evidence"]["id"]
        ok = cli("case", "evidence", "add", task, "--claim", "w", "--derived-from", own)
        assert ok.data["evidence"]["derivedFrom"] == [own]


class TestReadersNeverWrite:
    def test_read_commands_change_nothing(self, cli: Cli, task: str, state_root: Path) -> None:
        """status, list, read-evidence and audit create, modify and lock nothing."""
        ev = cli("case", "evidence", "add", task, "--claim", "x").data["evidence"]["id"]
        before = tree_state(state_root)
        for args in (
            ["case", "status", task],
            ["case", "list"],
            ["case", "read-evidence", task, ev],
            ["case", "audit", task],
        ):
            assert cli(*args).code == 0
            assert cli(*args, human=True).code == 0
        assert tree_state(state_root) == before

    def test_reading_an_empty_state_root_creates_nothing(self, cli: Cli, state_root: Path) -> None:
        """Listing a store that does not exist yet does not create it."""
        assert cli("case", "list").data["total"] == 0
        assert not state_root.exists()


class TestWorkspaces:
    def test_status_works_from_any_directory(self, cli: Cli, task: str, tmp_path: Path) -> None:
        """A case is found by id from outside its repository."""
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        assert cli("case", "status", task, cwd=outside).data["taskId"] == task

    def test_writes_from_another_workspace_are_pointed_home(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """Writing to a case from another workspace is refused, naming the option to use."""
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        out = cli("case", "note", task, "x", cwd=outside)
        assert out.code == 3
        assert f"(--workspace {cli.cwd})" in out.envelope["error"]["message"]

    def test_dash_c_selects_the_workspace(self, cli: Cli, repo: Path, tmp_path: Path) -> None:
        """-C DIR runs as if started in DIR."""
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        task = cli("-C", str(repo), "case", "open", "goal", cwd=outside).data["taskId"]
        assert cli("case", "note", task, "from repo").code == 0


class TestRealProcess:
    @pytest.mark.process
    def test_python_dash_m_cortex_round_trip(self, env: dict[str, str], repo: Path) -> None:
        """The real entry point opens, records from stdin, and shows a case."""
        opened = run_cortex(["case", "open", "Real process", "--json"], env, repo)
        assert opened.returncode == 0, opened.stderr
        task = json.loads(opened.stdout)["data"]["taskId"]
        added = run_cortex(
            ["case", "evidence", "add", task, "--claim", "from stdin", "--raw-file", "-", "--json"],
            env,
            repo,
            stdin=b"line one\nline two\n",
        )
        assert added.returncode == 0, added.stderr
        ref = json.loads(added.stdout)["data"]["evidence"]["rawRef"]
        assert ref.startswith(f"case://{task}/raw/raw_")
        shown = run_cortex(["case", "status", task], env, repo)
        assert shown.returncode == 0
        assert task in shown.stdout.decode()
        assert shown.stderr == b""

    @pytest.mark.process
    def test_installed_console_script_if_present(self, env: dict[str, str], repo: Path) -> None:
        """The `cortex` console script next to this interpreter answers like the module."""
        script = Path(sys.executable).parent / "cortex"
        if not script.exists():
            pytest.skip("no console script next to the interpreter")
        proc = subprocess.run(
            [str(script), "case", "list", "--json"],
            cwd=repo,
            env=env,
            capture_output=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["command"] == "case.list"
