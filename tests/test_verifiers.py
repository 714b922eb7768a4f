"""The verifiers and their approval: pytest, scope, output bounds, plugins, `case trust`.

Real processes on real repositories (docs/design/verification.md §2). Plugins are discovered by
a real `python -m cortex` process from a distribution on PYTHONPATH; `case trust` is answered at
a real pseudo-terminal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ROOT,
    Cli,
    Outcome,
    case_path,
    configure_verifiers,
    git,
    make_repo,
    ready_to_verify,
    run_cortex,
)
from verify_kit import (
    AWS_KEY,
    GITHUB_TOKEN,
    approve,
    assert_not_verified,
    assert_refused,
    durable_state,
    edit,
    raw_blob,
    receipts_by,
    steps,
    trust_at_terminal,
    write_config,
)

# D. pytest -----------------------------------------------------------------------------------

TEST_X = """\
from helper import value


def test_good() -> None:
    assert value() == 1


def test_bad() -> None:
    assert value() == 2


def test_skipped() -> None:
    import pytest

    pytest.skip("not today")
"""


@pytest.fixture
def suite(repo: Path, env: dict[str, str]) -> Path:
    """A committed tiny test suite, and `[verifiers.pytest]` running it with this interpreter.

    PYTHONDONTWRITEBYTECODE is taken out of the environment: the verifier must set it itself.
    """
    tests = repo / "tests"
    tests.mkdir()
    (tests / "helper.py").write_text("def value() -> int:\n    return 1\n")
    (tests / "test_x.py").write_text(TEST_X)
    git(repo, "add", "tests", env=env)
    git(repo, "commit", "-q", "-m", "tests", env=env)
    configure_verifiers(repo, env, {"pytest": [sys.executable, "-m", "pytest", "-q"]})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    approve(env)
    return tests


class TestPytest:
    @pytest.mark.process
    @pytest.mark.usefixtures("suite")
    def test_failing_tests_are_named_and_claims_select_one_test(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("pytest",))
        edit(repo)
        porcelain = git(repo, "status", "--porcelain", "--untracked-files=all", env=env)
        out = cli(
            "case",
            "verify",
            task,
            "--claim",
            "good=the good test passes",
            "--contract",
            "good=pytest#tests/test_x.py::test_good",
            "--claim",
            "bad=the bad test passes",
            "--contract",
            "bad=pytest#tests/test_x.py::test_bad",
            "--claim",
            "skip=the skipped test passes",
            "--contract",
            "skip=pytest#tests/test_x.py::test_skipped",
            "--claim",
            "nope=a test that does not exist passes",
            "--contract",
            "nope=pytest#tests/test_x.py::test_nope",
        )
        data = out.data
        assert data["batch"]["binding"] == "bound", data["batch"]["reasons"]
        receipts = receipts_by(data)
        run = receipts["pytest"]
        assert run["status"] == "failed"
        assert run["claim"].endswith("; 1 failed, 1 passed, 1 skipped")
        assert receipts["claim:good"]["status"] == "passed"
        assert receipts["claim:bad"]["status"] == "failed"
        assert receipts["claim:skip"]["status"] == "not_run"
        assert receipts["claim:nope"]["status"] == "not_run"
        assert data["assessment"]["status"] == "failed"
        # The run's evidence and the failing-tests finding.
        assert len(run["evidence"]) == 2
        finding = cli("case", "read-evidence", task, run["evidence"][1]).data["evidence"]
        assert finding["kind"] == "unit_test"
        assert finding["claim"] == "1 failing test(s): tests/test_x.py::test_bad"
        assert finding["derivedFrom"] == [run["evidence"][0]]
        blob = raw_blob(env, task, run["artifact"])
        assert b"--junitxml=" in blob
        assert b"1 failed" in blob
        # The run left nothing in the tree: no cache, no bytecode.
        assert git(repo, "status", "--porcelain", "--untracked-files=all", env=env) == porcelain
        assert not list(repo.rglob("__pycache__"))
        assert not list(repo.rglob(".pytest_cache"))
        assert_not_verified(cli, task, out)

    @pytest.mark.process
    @pytest.mark.usefixtures("suite")
    def test_verify_and_status_name_the_failing_tests(self, cli: Cli, repo: Path) -> None:
        """Issue 13: the failing test ids, in the JSON and the text of verify and status."""
        task = ready_to_verify(cli, verify=("pytest",))
        edit(repo)
        out = cli("case", "verify", task)
        run = receipts_by(out.data)["pytest"]
        assert (run["failing"], run["failingTotal"]) == (["tests/test_x.py::test_bad"], 1)
        (view,) = out.data["assessment"]["receipts"]
        assert (view["failing"], view["failingTotal"]) == (["tests/test_x.py::test_bad"], 1)
        status = cli("case", "status", task).data["verification"]["receipts"]
        assert status[0]["failing"] == ["tests/test_x.py::test_bad"]
        for text in (
            cli("case", "status", task, human=True).stdout,
            edited_verify_text(cli, repo, task),
        ):
            assert "failing" in text
            assert "tests/test_x.py::test_bad" in text

    @pytest.mark.process
    def test_a_passing_suite_verifies(
        self, cli: Cli, repo: Path, env: dict[str, str], suite: Path
    ) -> None:
        (suite / "test_x.py").write_text("def test_good() -> None:\n    assert True\n")
        git(repo, "commit", "-q", "-am", "only the good test", env=env)
        task = ready_to_verify(cli, verify=("pytest",))
        edit(repo)
        out = cli(
            "case",
            "verify",
            task,
            "--claim",
            "good=the good test passes",
            "--contract",
            "good=pytest#tests/test_x.py::test_good",
        )
        assert out.data["assessment"]["status"] == "verified"
        assert receipts_by(out.data)["pytest"]["claim"].endswith("; 1 passed")

    @pytest.mark.process
    @pytest.mark.usefixtures("suite")
    def test_nothing_collected_is_inconclusive(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(
            repo, env, {"pytest": [sys.executable, "-m", "pytest", "-q", "-k", "no_such_test"]}
        )
        task = ready_to_verify(cli, verify=("pytest",))
        edit(repo)
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["pytest"]
        assert receipt["status"] == "inconclusive"
        assert any("exit 5" in note for note in receipt["notes"])
        assert_not_verified(cli, task, out)


# D. scope ------------------------------------------------------------------------------------


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> None:
    """`command:unit` runs `true`, approved by the launcher's environment."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    approve(env)


def edited_verify_text(cli: Cli, repo: Path, task: str, *extra: str) -> str:
    """Edit app.py again and verify, as a person reads it (text, not JSON)."""
    (repo / "app.py").write_text((repo / "app.py").read_text() + "# again\n")
    out = cli("case", "verify", task, *extra, human=True)
    assert out.code in {0, 2}, out.stderr  # 2: the batch is recorded but does not verify
    return out.stdout


def drift_finding(cli: Cli, task: str, receipt: dict[str, Any]) -> str:
    """The claim of the drift evidence a scope receipt points at."""
    assert len(receipt["evidence"]) == 2, receipt
    claim: str = cli("case", "read-evidence", task, receipt["evidence"][1]).data["evidence"][
        "claim"
    ]
    return claim


@pytest.mark.usefixtures("unit")
class TestScope:
    def test_a_change_outside_the_boundary_fails_with_drift_evidence(
        self, cli: Cli, repo: Path
    ) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        edit(repo)
        (repo / "other.py").write_text("x = 1\n")
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["scope"]
        assert receipt["status"] == "failed"
        assert drift_finding(cli, task, receipt) == (
            "scope drift: 1 changed file(s) outside the boundary: other.py"
        )
        assert out.data["assessment"]["failed"] == ["scope"]
        assert_not_verified(cli, task, out)

    def test_verify_and_status_name_the_files_outside_the_boundary_bounded(
        self, cli: Cli, repo: Path
    ) -> None:
        """Issue 13: the first FAILING_SHOWN files outside, and how many more, text and JSON."""
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        edit(repo)
        outside = [f"out{n:02}.py" for n in range(25)]
        for name in outside:
            (repo / name).write_text("x = 1\n")
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["scope"]
        assert (receipt["failing"], receipt["failingTotal"]) == (outside[:20], 25)
        views = {v["requirement"]: v for v in out.data["assessment"]["receipts"]}
        assert (views["scope"]["failing"], views["scope"]["failingTotal"]) == (outside[:20], 25)
        assert views["command:unit"]["failing"] == []
        status = cli("case", "status", task)
        scope = next(
            r for r in status.data["verification"]["receipts"] if r["requirement"] == "scope"
        )
        assert (scope["failing"], scope["failingTotal"]) == (outside[:20], 25)
        for text in (
            cli("case", "status", task, human=True).stdout,
            edited_verify_text(cli, repo, task),
        ):
            flat = " ".join(text.split())
            assert "out00.py, out01.py" in flat
            assert "out19.py (and 5 more)" in flat
            assert "out20.py" not in flat

    def test_ack_drift_passes_with_a_note(self, cli: Cli, repo: Path) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        edit(repo)
        (repo / "other.py").write_text("x = 1\n")
        out = cli("case", "verify", task, "--ack-drift")
        receipt = receipts_by(out.data)["scope"]
        assert receipt["status"] == "passed"
        assert "drift acknowledged with --ack-drift" in receipt["notes"]
        assert "other.py" in drift_finding(cli, task, receipt)
        assert out.data["batch"]["acknowledged"] == ["drift"]
        assert out.data["assessment"]["status"] == "verified"

    def test_a_pass_by_acknowledgement_is_never_shown_as_a_plain_pass(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        """Issue 13: status, show, timeline, summary.md and attest name the acknowledgement."""
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        edit(repo)
        (repo / "other.py").write_text("x = 1\n")
        out = cli("case", "verify", task, "--ack-drift")
        assert receipts_by(out.data)["scope"]["acknowledged"] == "drift"
        assert receipts_by(out.data)["command:unit"]["acknowledged"] is None
        assessment = out.data["assessment"]
        assert assessment["acknowledged"] == ["scope (drift)"]
        assert "passed only by acknowledgement: scope (drift)" in assessment["reasons"]
        views = {v["requirement"]: v["acknowledged"] for v in assessment["receipts"]}
        assert views == {"command:unit": None, "scope": "drift"}
        texts = {
            "verify": edited_verify_text(cli, repo, task, "--ack-drift"),
            "status": cli("case", "status", task, human=True).stdout,
            "show": cli("case", "show", task, human=True).stdout,
            "timeline": cli("case", "timeline", task, human=True).stdout,
        }
        for name, text in texts.items():
            flat = " ".join(text.split())
            assert "passed by acknowledgement of drift" in flat, (name, text)
        cards = cli("case", "timeline", task).data["entries"]
        scope = [c for c in cards if c.get("requirement") == "scope" and c["kind"] == "receipt"]
        assert scope
        assert all(c["acknowledged"] == "drift" for c in scope), scope
        predicate = cli("case", "attest", task).data["statement"]["predicate"]
        assert predicate["passedTests"] == ["command:unit"]
        assert predicate["warnedTests"] == ["scope"]
        assert predicate["result"] == "WARNED"
        assert cli("case", "complete", task, "--outcome", "done").code == 0
        summary = (case_path(env, task) / "summary.md").read_text()
        assert "- scope: passed by acknowledgement of drift" in summary
        assert "- scope: passed\n" not in summary
        assert "passed only by acknowledgement: scope (drift)" in summary

    def test_a_commit_outside_the_boundary_is_drift_too(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        (repo / "other.py").write_text("x = 1\n")
        git(repo, "add", "other.py", env=env)
        git(repo, "commit", "-q", "-m", "sneak a file in", env=env)
        edit(repo)
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["scope"]
        assert receipt["status"] == "failed"
        assert drift_finding(cli, task, receipt).endswith(": other.py")

    def test_a_boundary_directory_covers_what_lies_under_it(self, cli: Cli, repo: Path) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "scope"), files=("src/",))
        (repo / "src" / "deep").mkdir(parents=True)
        (repo / "src" / "deep" / "a.py").write_text("a = 1\n")
        (repo / "srcx.py").write_text("b = 1\n")
        out = cli("case", "verify", task)
        receipt = receipts_by(out.data)["scope"]
        assert receipt["status"] == "failed"
        assert drift_finding(cli, task, receipt).endswith(": srcx.py")

    @pytest.mark.process
    def test_high_risk_drift_needs_ack_drift_before_anything_runs(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        log = repo.parent / "ran.log"
        configure_verifiers(repo, env, {"unit": steps("log", str(log))})
        task = ready_to_verify(cli, verify=("command:unit", "scope"), risk="high")
        edit(repo)
        (repo / "other.py").write_text("x = 1\n")
        before = durable_state(env)
        out = cli("case", "verify", task)
        envelope = assert_refused(out, 5)
        assert "other.py" in envelope["error"]["message"]
        assert any("--ack-drift" in a["command"] for a in envelope["actions"])
        assert durable_state(env) == before
        assert not log.exists()
        acknowledged = cli("case", "verify", task, "--ack-drift")
        assert acknowledged.data["assessment"]["status"] == "verified"
        assert log.exists()

    def test_a_clean_tree_in_a_change_task_needs_no_op(self, cli: Cli, env: dict[str, str]) -> None:
        task = ready_to_verify(cli, verify=("command:unit", "scope"))
        before = durable_state(env)
        out = cli("case", "verify", task)
        envelope = assert_refused(out, 5)
        assert any("--no-op" in a["command"] for a in envelope["actions"])
        assert durable_state(env) == before
        no_op = cli("case", "verify", task, "--no-op")
        assert no_op.data["batch"]["acknowledged"] == ["no-op"]
        assert receipts_by(no_op.data)["scope"]["status"] == "passed"
        assert no_op.data["assessment"]["status"] == "verified"


# D. output bounds and redaction --------------------------------------------------------------


def verify_output(cli: Cli, repo: Path, env: dict[str, str], *argv: str) -> tuple[str, bytes]:
    """Verify a case whose only verifier runs `verifier_steps.py argv`; return its raw blob."""
    configure_verifiers(repo, env, {"unit": steps(*argv)})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    out = cli("case", "verify", task)
    receipt = receipts_by(out.data)["command:unit"]
    assert receipt["status"] == "passed"
    return task, raw_blob(env, task, receipt["artifact"])


class TestOutputBounds:
    @pytest.mark.process
    def test_five_megabytes_of_output_are_stored_bounded(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        _, blob = verify_output(cli, repo, env, "print", "FIRST", "::", "flood", str(5 << 20))
        assert len(blob) < 100_000
        assert b"bytes omitted ..." in blob
        assert b"FIRST" in blob
        # The end of the output (where a test run says what failed) is kept.
        assert blob.split(b"\n--- stderr ---\n")[0].endswith(b"0123456789abcde\n")

    @pytest.mark.process
    def test_secrets_printed_by_a_verifier_are_not_stored(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        task, blob = verify_output(
            cli,
            repo,
            env,
            "print",
            f"key {AWS_KEY} token {GITHUB_TOKEN}",
            "::",
            "flood",
            str(1 << 20),
            "::",
            "print",
            f"again {GITHUB_TOKEN} {AWS_KEY}",
        )
        assert b"key " in blob
        assert b"again " in blob
        for secret in (AWS_KEY, GITHUB_TOKEN):
            assert secret.encode() not in blob
            assert secret[4:].encode() not in blob
        stored = b"".join(p.read_bytes() for p in case_path(env, task).rglob("*") if p.is_file())
        for secret in (AWS_KEY, GITHUB_TOKEN):
            assert secret.encode() not in stored

    def test_a_secret_in_the_configured_argv_is_not_stored_or_printed(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": ["true", f"--token={GITHUB_TOKEN}"]})
        approve(env)
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        assert out.data["assessment"]["status"] == "verified"
        assert GITHUB_TOKEN not in out.stdout
        files = [p for p in Path(env["CORTEX_STATE_DIR"]).rglob("*") if p.is_file()]
        for path in files:
            assert GITHUB_TOKEN[4:].encode() not in path.read_bytes(), path

    @pytest.mark.process
    def test_a_secret_cut_by_the_head_bound_is_not_stored_in_part(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        # The transcript's stdout starts with the 8172 filler bytes; the token starts 20 bytes
        # before the head's 8 KiB end, so its first 16 secret characters end the head.
        _, blob = verify_output(
            cli, repo, env, "flood", "8172", "::", "print", GITHUB_TOKEN, "::", "flood", "100000"
        )
        assert b"bytes omitted" in blob
        assert GITHUB_TOKEN[4:16].encode() not in blob

    @pytest.mark.process
    def test_a_secret_cut_by_the_tail_bound_is_not_stored_in_part(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        # After the token line (41 bytes) come 24555 bytes: the 24576-byte tail starts 20 bytes
        # into the token, so its last 20 characters open the tail.
        _, blob = verify_output(
            cli,
            repo,
            env,
            "flood",
            "108192",
            "::",
            "print",
            GITHUB_TOKEN,
            "::",
            "flood",
            str(24576 - 21),
        )
        assert b"bytes omitted" in blob
        assert GITHUB_TOKEN[-16:].encode() not in blob


# D. timeouts that a grandchild outlives ------------------------------------------------------


@pytest.mark.process
def test_a_grandchild_that_escapes_the_group_cannot_hang_verify(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    pidfile = repo.parent / "escaped.pid"
    write_config(
        repo,
        env,
        {"slow": {"argv": steps("escape", str(pidfile), "::", "sleep", "30"), "timeout": 1}},
    )
    approve(env)
    task = ready_to_verify(cli, verify=("command:slow",))
    edit(repo)
    started = time.monotonic()
    try:
        out = cli("case", "verify", task)
        elapsed = time.monotonic() - started
    finally:
        if pidfile.exists():
            # Our own test started it (through the verifier) in a session of its own.
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert elapsed < 8, f"verify took {elapsed:.1f} s"
    assert receipts_by(out.data)["command:slow"]["status"] == "blocked"


# D. plugins ----------------------------------------------------------------------------------

PLUGIN = '''\
"""A third-party verifier distribution for the tests."""

from cortex.verifiers.base import Outcome


class _Base:
    version = "0.1"

    def check(self, requirement, context):
        return None


class FakeVerifier(_Base):
    kind = "fake"

    def run(self, requirement, context):
        return Outcome(
            status="passed",
            summary=f"fake: {requirement} looked at {len(context.changed or [])} file(s)",
            raw=b"fake output\\n",
            contracts={"one": "passed", "two": "failed"},
        )


class BoomVerifier(_Base):
    kind = "boom"

    def run(self, requirement, context):
        raise RuntimeError("the plugin broke")


class PickyVerifier(_Base):
    kind = "picky"

    def check(self, requirement, context):
        return "picky needs a [verifiers.picky] table"

    def run(self, requirement, context):
        raise AssertionError("run after a failed check")


class ShadowVerifier(_Base):
    kind = "command"

    def run(self, requirement, context):
        return Outcome(status="passed", summary="shadowed the built-in")


class NoneVerifier(_Base):
    kind = "none"

    def run(self, requirement, context):
        return None


class BadStatusVerifier(_Base):
    kind = "badstatus"

    def run(self, requirement, context):
        return Outcome(status="great", summary="a status the protocol does not have")


class CheckRaisesVerifier(_Base):
    kind = "checkraises"

    def check(self, requirement, context):
        raise RuntimeError("check broke")

    def run(self, requirement, context):
        return Outcome(status="passed", summary="ran after a broken check")
'''

ENTRY_POINTS = """\
[cortex.verifiers]
fake = fake_cortex_plugin:FakeVerifier
boom = fake_cortex_plugin:BoomVerifier
picky = fake_cortex_plugin:PickyVerifier
command = fake_cortex_plugin:ShadowVerifier
none = fake_cortex_plugin:NoneVerifier
badstatus = fake_cortex_plugin:BadStatusVerifier
checkraises = fake_cortex_plugin:CheckRaisesVerifier
missing = fake_cortex_plugin_not_there:Nothing
"""


@pytest.fixture
def plugin_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a cortex process that finds the fake plugin distribution."""
    site = tmp_path / "site"
    info = site / "fake_cortex_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "fake_cortex_plugin.py").write_text(PLUGIN)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-cortex-plugin\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return {**env, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}


def run_verify(task: str, plugin_env: dict[str, str], repo: Path) -> Outcome:
    """`cortex case verify` as a real process."""
    done = run_cortex(["case", "verify", task, "--json"], plugin_env, repo)
    return Outcome(done.returncode, done.stdout.decode(), done.stderr.decode())


class TestPlugins:
    @pytest.mark.process
    def test_an_entry_point_verifier_is_discovered_and_its_receipt_kept(
        self, cli: Cli, repo: Path, env: dict[str, str], plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("fake",))
        edit(repo)
        out = run_verify(task, plugin_env, repo)
        assert out.code == 0, out.stdout + out.stderr
        data = out.data
        receipt = receipts_by(data)["fake"]
        assert receipt["status"] == "passed"
        assert receipt["tool"] == "fake"
        assert receipt["verifierVersion"] == "0.1"
        assert receipt["claim"] == "fake: fake looked at 1 file(s)"
        assert raw_blob(env, task, receipt["artifact"]) == b"fake output\n"
        assert data["assessment"]["status"] == "verified"

    @pytest.mark.process
    def test_a_plugin_contract_selects_its_result(
        self, cli: Cli, repo: Path, plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("fake",))
        edit(repo)
        args = ["case", "verify", task, "--claim", "a=one holds", "--contract", "a=fake#one"]
        args += ["--claim", "b=two holds", "--contract", "b=fake#two", "--json"]
        done = run_cortex(args, plugin_env, repo)
        data = Outcome(done.returncode, done.stdout.decode(), done.stderr.decode()).data
        receipts = receipts_by(data)
        assert receipts["claim:a"]["status"] == "passed"
        assert receipts["claim:b"]["status"] == "failed"
        assert data["assessment"]["status"] == "failed"

    @pytest.mark.process
    def test_a_plugin_that_raises_is_blocked_not_a_crash(
        self, cli: Cli, repo: Path, plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("boom",))
        edit(repo)
        out = run_verify(task, plugin_env, repo)
        assert out.code == 2, out.stdout + out.stderr
        assert "Traceback" not in out.stderr
        receipt = receipts_by(out.data)["boom"]
        assert receipt["status"] == "blocked"
        assert "failed (RuntimeError)" in receipt["claim"]
        assert "the plugin broke" in receipt["notes"]
        assert out.data["assessment"]["status"] != "verified"
        assert_not_verified(cli, task)

    @pytest.mark.process
    @pytest.mark.parametrize(
        ("kind", "message"),
        [
            ("picky", "picky needs a [verifiers.picky] table"),
            ("missing", "failed to load"),
            ("nosuchkind", "unknown verifier 'nosuchkind'"),
        ],
    )
    def test_a_plugin_that_cannot_run_refuses_the_batch(
        self,
        cli: Cli,
        *,
        repo: Path,
        env: dict[str, str],
        plugin_env: dict[str, str],
        kind: str,
        message: str,
    ) -> None:
        task = ready_to_verify(cli, verify=(kind,))
        edit(repo)
        before = durable_state(env)
        out = run_verify(task, plugin_env, repo)
        envelope = assert_refused(out, 4)
        assert message in envelope["error"]["message"]
        assert durable_state(env) == before

    @pytest.mark.process
    def test_a_plugin_cannot_shadow_a_built_in_kind(
        self, cli: Cli, repo: Path, env: dict[str, str], plugin_env: dict[str, str]
    ) -> None:
        configure_verifiers(repo, env, {"unit": ["false"]})
        task = ready_to_verify(cli)
        edit(repo)
        out = run_verify(task, {**plugin_env, "CORTEX_APPROVE_COMMANDS": "1"}, repo)
        receipt = receipts_by(out.data)["command:unit"]
        assert receipt["status"] == "failed"
        assert receipt["claim"].startswith("unit: `false` exited 1")

    @pytest.mark.process
    def test_a_plugin_that_returns_no_outcome_is_blocked(
        self, cli: Cli, repo: Path, plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("none",))
        edit(repo)
        out = run_verify(task, plugin_env, repo)
        assert out.code == 2, out.stdout
        assert receipts_by(out.data)["none"]["status"] == "blocked"

    @pytest.mark.process
    def test_a_plugin_whose_check_raises_is_not_an_internal_error(
        self, cli: Cli, repo: Path, plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("checkraises",))
        edit(repo)
        out = run_verify(task, plugin_env, repo)
        assert out.code in {0, 4}, out.stdout
        assert out.envelope["error"] is None or out.envelope["error"]["code"] != "internal_error"

    @pytest.mark.process
    def test_a_plugin_status_outside_the_protocol_does_not_corrupt_the_case(
        self, cli: Cli, repo: Path, plugin_env: dict[str, str]
    ) -> None:
        task = ready_to_verify(cli, verify=("badstatus",))
        edit(repo)
        out = run_verify(task, plugin_env, repo)
        assert out.code in {2, 4}, out.stdout
        status = cli("case", "status", task)
        assert status.code == 0, status.stdout
        audit = cli("case", "audit", task)
        assert audit.code == 0, audit.stdout
        assert status.data["verification"] is None or (
            status.data["verification"]["status"] != "verified"
        )


# E. trust ------------------------------------------------------------------------------------


def grants_file(env: dict[str, str]) -> Path:
    """Where `case trust` keeps grants: $XDG_CONFIG_HOME/cortex/command-grants.json."""
    return Path(env["XDG_CONFIG_HOME"]) / "cortex" / "command-grants.json"


def verify_unit(cli: Cli, repo: Path, task: str, text: str) -> dict[str, Any]:
    """Edit app.py to `text` and verify; return the command:unit receipt."""
    edit(repo, text)
    receipt: dict[str, Any] = receipts_by(cli("case", "verify", task).data)["command:unit"]
    return receipt


class TestTrust:
    @pytest.fixture
    def marked(self, repo: Path, env: dict[str, str]) -> Path:
        """`[verifiers.unit]` appends to a marker file outside the repository."""
        marker = repo.parent / "ran.marker"
        configure_verifiers(repo, env, {"unit": steps("append", str(marker), "ran")})
        assert "CORTEX_APPROVE_COMMANDS" not in env
        return marker

    @pytest.mark.process
    @pytest.mark.usefixtures("marked")
    def test_without_a_terminal_nothing_is_granted(self, repo: Path, env: dict[str, str]) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "cortex", "case", "trust", "unit", "--json"],
            cwd=repo,
            env=env,
            input=b"unit\nunit\n",
            capture_output=True,
            timeout=60,
            start_new_session=True,
            check=False,
        )
        out = Outcome(done.returncode, done.stdout.decode(), done.stderr.decode())
        envelope = assert_refused(out, 5)
        assert "interactive terminal" in envelope["error"]["message"]
        assert not grants_file(env).exists()
        assert not grants_file(env).parent.exists()

    @pytest.mark.process
    def test_a_person_at_the_terminal_grants_exactly_this_command(
        self, cli: Cli, repo: Path, env: dict[str, str], marked: Path
    ) -> None:
        argv = steps("append", str(marked), "ran")
        out, shown = trust_at_terminal(env, repo, "unit", "unit")
        assert b"Approve the verifier 'unit'" in shown
        assert STEPS_NAME.encode() in shown
        data = out.data
        assert data["changed"] is True
        assert data["argv"] == argv
        digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()
        assert data["argvSha256"] == digest
        stored = json.loads(grants_file(env).read_bytes())
        (grant,) = stored["grants"]
        assert (grant["workspace"], grant["name"], grant["argvSha256"]) == (
            data["workspace"],
            "unit",
            digest,
        )
        # Verify without the launcher's variable: the grant approves the command.
        task = ready_to_verify(cli)
        assert verify_unit(cli, repo, task, "print('one')\n")["status"] == "passed"
        assert marked.read_text() == "ran\n"
        # A new argv in cortex.toml is another command: the grant does not cover it.
        configure_verifiers(repo, env, {"unit": steps("append", str(marked), "ran twice")})
        changed = verify_unit(cli, repo, task, "print('two')\n")
        assert changed["status"] == "blocked"
        assert marked.read_text() == "ran\n"
        # Back to the approved argv, then revoked: blocked again.
        configure_verifiers(repo, env, {"unit": argv})
        assert verify_unit(cli, repo, task, "print('three')\n")["status"] == "passed"
        revoked = cli("case", "trust", "unit", "--revoke").data
        assert revoked["changed"] is True
        assert json.loads(grants_file(env).read_bytes())["grants"] == []
        assert verify_unit(cli, repo, task, "print('four')\n")["status"] == "blocked"
        assert marked.read_text() == "ran\nran\n"

    @pytest.mark.process
    @pytest.mark.usefixtures("marked")
    def test_another_answer_grants_nothing(self, repo: Path, env: dict[str, str]) -> None:
        out, shown = trust_at_terminal(env, repo, "unit", "yes")
        assert b"Type unit to approve" in shown
        assert_refused(out, 5)
        assert not grants_file(env).exists()

    @pytest.mark.process
    def test_a_grant_is_for_one_workspace(
        self, repo: Path, env: dict[str, str], marked: Path, tmp_path: Path
    ) -> None:
        out, _ = trust_at_terminal(env, repo, "unit", "unit")
        assert out.code == 0, out.stdout
        other = make_repo(tmp_path / "other", env)
        argv = steps("append", str(marked), "ran")
        configure_verifiers(other, env, {"unit": argv})
        cli = Cli(env, other)
        task = ready_to_verify(cli)
        assert verify_unit(cli, other, task, "print('x')\n")["status"] == "blocked"
        assert not marked.exists()

    @pytest.mark.usefixtures("marked")
    def test_trust_names_a_configured_verifier(self, cli: Cli, env: dict[str, str]) -> None:
        out = cli("case", "trust", "nosuch")
        assert_refused(out, 4)
        assert not grants_file(env).exists()

    @pytest.mark.parametrize(
        "where",
        [
            "command-grants.json",
            ".cortex/command-grants.json",
            ".config/cortex/command-grants.json",
        ],
    )
    def test_a_grants_file_inside_the_repository_approves_nothing(
        self, cli: Cli, repo: Path, env: dict[str, str], marked: Path, where: str
    ) -> None:
        argv = steps("append", str(marked), "ran")
        grant = {
            "schemaVersion": 1,
            "grants": [
                {
                    "workspace": str(repo),
                    "name": "unit",
                    "argvSha256": hashlib.sha256("\0".join(argv).encode()).hexdigest(),
                    "grantedAt": "2026-01-01T00:00:00.000Z",
                    "argv": argv,
                }
            ],
        }
        path = repo / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(grant))
        git(repo, "add", "-f", where, env=env)
        git(repo, "commit", "-q", "-m", "approve myself", env=env)
        task = ready_to_verify(cli)
        assert verify_unit(cli, repo, task, "print('x')\n")["status"] == "blocked"
        assert not marked.exists()

    @pytest.mark.parametrize(
        ("file", "text"),
        [
            ("cortex.toml", "approve = true\n"),
            ("cortex.toml", 'CORTEX_APPROVE_COMMANDS = "1"\n'),
            ("cortex.toml", "approve_commands = true\n"),
            ("cortex.toml", "[verifiers.unit]\napprove = true\n"),
            ("cortex.toml", "[verifiers.unit]\ngranted = true\n"),
            ("pyproject.toml", "[tool.cortex]\napprove = true\n"),
        ],
    )
    def test_repository_configuration_cannot_approve(
        self,
        cli: Cli,
        *,
        repo: Path,
        env: dict[str, str],
        marked: Path,
        file: str,
        text: str,
    ) -> None:
        task = ready_to_verify(cli)
        edit(repo)
        argv = json.dumps(steps("append", str(marked), "ran"))
        if file == "cortex.toml" and text.startswith("[verifiers.unit]"):
            content = text + f"argv = {argv}\n"
        elif file == "cortex.toml":
            content = text + f"\n[verifiers.unit]\nargv = {argv}\n"
        else:
            content = text
        (repo / file).write_text(content)
        before = durable_state(env)
        out = cli("case", "verify", task)
        envelope = assert_refused(out, 4)
        assert envelope["error"]["code"] == "config_error"
        assert durable_state(env) == before
        assert not marked.exists()

    def test_a_corrupt_grants_file_approves_nothing(
        self, cli: Cli, repo: Path, env: dict[str, str], marked: Path
    ) -> None:
        grants_file(env).parent.mkdir(parents=True)
        grants_file(env).write_text('{"grants": [{"workspace": ')
        task = ready_to_verify(cli)
        edit(repo)
        out = cli("case", "verify", task)
        if out.code == 2:
            assert receipts_by(out.data)["command:unit"]["status"] == "blocked"
        else:
            assert_refused(out, 4)
        assert not marked.exists()


STEPS_NAME = "verifier_steps.py"
