"""Attacks on the merge gate's promises (issue 27), each a real repository and real verifier runs.

Every test here was written to fail on the build it attacked; those whose fix is not local stay
`xfail(strict=True)` with the limit they show (docs/design/report.md, "The merge gate";
docs/design/trust.md, section 4).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, configure_verifiers, git, ready_to_verify

pytestmark = pytest.mark.process  # the verifiers are Python processes

SCRIPT_CHECK = [sys.executable, "check.py"]
"""A verifier whose program is a file of the tree: fails while app.py holds the word `bad`."""
CHECK_PY = "import sys\nsys.exit('bad' in open('app.py').read())\n"


def verdict(out: Outcome) -> dict[str, Any]:
    envelope = out.envelope
    assert envelope["data"] is not None, out.stdout + out.stderr
    data: dict[str, Any] = envelope["data"]
    assert out.code == (0 if data["verdict"] == "approve" else 5), out.stdout
    return data


def codes(data: dict[str, Any]) -> list[str]:
    return sorted(p["code"] for p in data["problems"])


@pytest.fixture
def scripted(repo: Path, env: dict[str, str]) -> Path:
    """main defines `unit` as `python check.py`; `feature` is checked out."""
    (repo / "check.py").write_text(CHECK_PY)
    git(repo, "add", "check.py", env=env)
    configure_verifiers(repo, env, {"unit": SCRIPT_CHECK})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    return repo


def finish(cli: Cli, repo: Path, env: dict[str, str], task: str) -> None:
    out = cli("case", "verify", task)
    assert out.envelope["data"]["assessment"]["status"] == "verified", out.stdout
    assert cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1").code == 0
    git(repo, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)


def test_a_branch_that_weakens_its_verifiers_script_is_named_in_the_verdict(
    scripted: Path, env: dict[str, str], cli: Cli
) -> None:
    """The base's definition is `python check.py`; the branch rewrites check.py to pass anything.

    The reproduction runs the branch's check.py (the tree is the branch's; trust.md says so):
    the verdict must at least say that the verifier's own file changed on the branch.
    """
    task = ready_to_verify(cli, files=("app.py", "check.py"))
    (scripted / "check.py").write_text("import sys\nsys.exit(0)\n")
    (scripted / "app.py").write_text("print('bad')\n")
    finish(cli, scripted, env, task)
    for extra in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *extra))
        said = " ".join(data["warnings"]) + json.dumps(data["problems"])
        assert "check.py" in said, (extra, data["verdict"], data["warnings"])


CHECK = [sys.executable, "-c", "import sys; sys.exit('bad' in open('app.py').read())"]


@pytest.fixture
def branch(repo: Path, env: dict[str, str]) -> Path:
    configure_verifiers(repo, env, {"unit": CHECK})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    return repo


def test_a_plan_that_requires_only_scope_does_not_pass_for_tested_code(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    """The case chooses its own bar: a plan requiring only `scope` proves the files changed are
    the planned ones, not that the code works. The head's code fails the base's `unit`."""
    task = ready_to_verify(cli, verify=("scope",))
    (branch / "app.py").write_text("print('bad')\n")
    finish(cli, branch, env, task)
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert codes(data) == ["not_reproduced"], data["cases"][0]["reproduction"]
    assert "only scope" in data["problems"][0]["message"]
    # At a level that trusts the record the plan's choice stands, and the verdict says so.
    local = verdict(cli("review", "--base", "main"))
    assert any("only scope" in w for w in local["warnings"]), local["warnings"]


def test_a_plan_that_requires_no_verifier_is_refused(cli: Cli) -> None:
    """Held: the plan gate refuses an empty verifier set, so no case reaches review without one."""
    task = cli.open("Fix the login redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    out = cli("case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
              "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
              "--file", "app.py", "--boundary-reason", "here")  # fmt: skip
    assert out.code == 5
    assert "--verify" in out.envelope["error"]["message"]


def test_criteria_without_receipts_are_not_approved(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = ready_to_verify(cli, criteria=("AC1=the redirect keeps the query",))
    (branch / "app.py").write_text("print('fixed')\n")
    out = cli("case", "verify", task)
    assert out.envelope["data"]["assessment"]["status"] != "verified"
    cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1", "--accept-failed")
    git(branch, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    for extra in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *extra))
        assert data["verdict"] != "approve", (extra, data)
        assert "partial" in codes(data) or "no_proof" in codes(data), codes(data)


def test_an_abandoned_case_named_by_a_trailer_is_not_approved(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).code == 0
    assert cli("case", "abort", task, "--reason", "not needed", "--actor", "agent-1").code == 0
    git(branch, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    for extra in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *extra))
        assert codes(data) == ["not_complete"], (extra, data)


HANGS = [
    sys.executable,
    "-c",
    (
        "import os, sys, time\n"
        "if os.environ.get('REVIEWING'): time.sleep(600)\n"
        "sys.exit('bad' in open('app.py').read())"
    ),
]
"""Passes on the agent's machine; in review (REVIEWING set) it never exits by itself."""


def test_a_verifier_that_never_exits_is_killed_at_its_deadline_and_not_approved(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    (repo / "cortex.toml").write_text(
        f"[verifiers.unit]\nargv = {json.dumps(HANGS)}\ntimeout = 2\n"
    )
    git(repo, "add", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-m", "configure", env=env)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    env["REVIEWING"] = "1"
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert codes(data) == ["not_reproduced"]
    assert "killed after 2 s" in data["problems"][0]["message"]


def test_a_symlink_out_of_the_tree_and_a_submodule_in_the_head_commit_reach_nothing(
    branch: Path, env: dict[str, str], cli: Cli, tmp_path: Path
) -> None:
    """The checkout follows no link and fetches no submodule: a link's target outside the tree
    survives the checkout's removal, and the submodule's URL is never cloned."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me\n")
    task = ready_to_verify(cli, files=("app.py", "out", "sub", ".gitmodules"))
    (branch / "app.py").write_text("print('fixed')\n")
    (branch / "out").symlink_to(outside)
    upstream = tmp_path / "upstream"
    git(tmp_path, "init", "-q", str(upstream), env=env)
    (upstream / "hook.py").write_text("raise SystemExit('ran code of a submodule')\n")
    git(upstream, "add", "hook.py", env=env)
    git(upstream, "commit", "-q", "-m", "sub", env=env)
    git(branch, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub",
        env=env)  # fmt: skip
    git(branch, "add", "out", env=env)
    finish(cli, branch, env, task)
    # The upstream disappears: a checkout that tried to clone it would fail.
    import shutil

    shutil.rmtree(upstream)
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "approve", data["problems"]
    assert (outside / "keep.txt").read_text() == "keep me\n"
    state = Path(env["CORTEX_STATE_DIR"])
    assert not list(state.glob("reproduce/*"))


LINT = [sys.executable, "-c", "import sys; sys.exit('TODO' in open('app.py').read())"]


def branch_requiring(
    repo: Path, env: dict[str, str], verifiers: dict[str, list[str]], require: str
) -> None:
    """Commit `verifiers` and `[review] require = <require>` on main; go on in a branch."""
    configure_verifiers(repo, env, verifiers)
    with (repo / "cortex.toml").open("a") as toml:
        toml.write(f"[review]\nrequire = {require}\n")
    git(repo, "commit", "-q", "-am", f"require {require}", env=env)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)


def test_a_plan_that_leaves_out_a_verifier_the_base_requires_is_not_approved(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """`[review] require` of the base commit, not the case's plan, says what must have run."""
    branch_requiring(repo, env, {"unit": CHECK, "lint": LINT}, '["command:lint"]')
    task = ready_to_verify(cli, verify=("command:unit",))
    (repo / "app.py").write_text("print('fixed')  # TODO\n")  # fails the base's lint
    finish(cli, repo, env, task)
    for args in ((), ("--reproduce",), ("--accept", "any")):
        data = verdict(cli("review", "--base", "main", *args))
        assert data["verdict"] == "needs_verification", args
        assert codes(data) == ["required_missing"], args
        assert f"cortex case plan {task} --verify command:lint" in data["problems"][0]["message"]


def test_the_machines_global_require_adds_to_the_base_s_never_removes(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """The gate's operator may require more than the base commit, never less."""
    branch_requiring(repo, env, {"unit": CHECK, "lint": LINT}, '["command:lint"]')
    task = ready_to_verify(cli, verify=("command:unit",))
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    config = Path(env["XDG_CONFIG_HOME"]) / "cortex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    said = {}
    for listed in ('["command:unit", "command:slow"]', "[]"):
        config.write_text(f"[review]\nrequire = {listed}\n")
        data = verdict(cli("review", "--base", "main"))
        assert codes(data) == ["required_missing"], listed
        said[listed] = data["problems"][0]["message"]
    named = "[review] require names command:lint (base branch), command:slow (global config"
    assert said['["command:unit", "command:slow"]'].startswith(named)
    assert said["[]"].startswith("[review] require names command:lint (base branch), which")


def test_a_requirement_only_the_branch_adds_is_not_the_gate_s(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """A branch cannot lift the base's list by editing its own cortex.toml."""
    branch_requiring(repo, env, {"unit": CHECK, "lint": LINT}, '["command:lint"]')
    configure_verifiers(repo, env, {"unit": CHECK, "lint": LINT})  # drops [review] on the branch
    task = ready_to_verify(cli, verify=("command:unit",))
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    assert codes(verdict(cli("review", "--base", "main"))) == ["required_missing"]


def test_a_case_whose_plan_includes_what_the_base_requires_is_approved(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    branch_requiring(repo, env, {"unit": CHECK, "lint": LINT}, '["command:lint"]')
    task = ready_to_verify(cli, verify=("command:unit", "command:lint"))
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    data = verdict(cli("review", "--base", "main", "--reproduce"))
    assert data["verdict"] == "approve", data["problems"]
    assert {r["requirement"] for r in data["cases"][0]["reproduction"]["runs"]} >= {"command:lint"}


# Trailers ------------------------------------------------------------------------------------


def test_trailers_hostile_repeated_and_of_another_store_are_judged_as_what_they_are(
    branch: Path, env: dict[str, str], cli: Cli, tmp_path: Path
) -> None:
    from conftest import make_repo

    # A case of another repository (another store), verified on the very same code.
    other = make_repo(tmp_path / "other", env)
    configure_verifiers(other, env, {"unit": CHECK})
    git(other, "checkout", "-q", "-b", "feature", env=env)
    foreign = Cli(env, other)
    stranger = ready_to_verify(foreign)
    (other / "app.py").write_text("print('fixed')\n")
    finish(foreign, other, env, stranger)
    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    finish(cli, branch, env, task)
    hostile = [
        f"{task}\x1b[2J",
        "../../etc/passwd",
        "task_" + "Z" * 300,
        f"{task} {task}",
        "$(touch pwned)",
    ]
    message = "more\n\n" + "".join(f"Cortex-Case: {v}\n" for v in [*hostile, task, stranger])
    git(branch, "commit", "-q", "--allow-empty", "-m", message, env=env)
    out = cli("review", "--base", "main")
    data = verdict(out)
    judged = sorted(c["taskId"] for c in data["cases"])
    assert judged == sorted([task, stranger]), judged  # each once; the hostile ones ignored
    assert codes(data) == ["case_missing"]  # another store's case is not this store's proof
    assert len([w for w in data["warnings"] if "not a task id" in w]) == len(hostile)
    text = cli("review", "--base", "main", human=True)
    assert "\x1b" not in text.stdout + text.stderr
    assert not (branch / "pwned").exists()


SKIP_ALL = (
    "import builtins\nimport io\n\n_open = builtins.open\n\n\n"
    "def _good(path, *args, **kwargs):\n"
    "    if path == 'app.py':\n"
    "        return io.StringIO(\"print('good')\")\n"
    "    return _open(path, *args, **kwargs)\n\n\n"
    "builtins.open = _good\n"
)
"""A conftest.py that makes every test read a good app.py, whatever the tree holds."""


def test_a_conftest_that_hides_the_code_from_pytest_is_named_in_the_verdict(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """The base requires the built-in `pytest`; the branch adds a conftest.py that hides the
    broken code from the tests, so the base's unchanged definition passes it."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text(
        "def test_app():\n    assert 'bad' not in open('app.py').read()\n"
    )
    git(repo, "add", "tests", env=env)
    git(repo, "commit", "-q", "-m", "a test", env=env)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)  # an interpreter with pytest
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    task = ready_to_verify(cli, verify=("pytest",), files=("app.py", "conftest.py"))
    (repo / "conftest.py").write_text(SKIP_ALL)
    (repo / "app.py").write_text("print('bad')\n")
    git(repo, "add", "conftest.py", env=env)
    out = cli("case", "verify", task)
    assert out.envelope["data"]["assessment"]["status"] == "verified", out.stdout
    assert cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1").code == 0
    git(repo, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    for extra in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *extra))
        assert any("conftest.py" in w for w in data["warnings"]), (extra, data["warnings"])


def test_the_branch_cannot_lower_its_gate_through_pyproject_cortex_toml_or_the_environment(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    """`[review] accept` comes from the base commit: the branch's pyproject.toml and cortex.toml
    and made-up variables change nothing. (The global configuration is the reviewing machine's:
    whoever sets its environment could as well pass `--accept`.)"""
    task = ready_to_verify(cli, files=("app.py", "pyproject.toml", "cortex.toml"))
    (branch / "app.py").write_text("print('fixed')\n")
    (branch / "pyproject.toml").write_text('[tool.cortex.review]\naccept = "any"\n')
    with (branch / "cortex.toml").open("a") as handle:
        handle.write('\n[review]\naccept = "any"\n')
    git(branch, "add", "pyproject.toml", env=env)
    out = cli("case", "verify", task)
    assert out.envelope["data"]["assessment"]["status"] == "verified", out.stdout
    assert cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1").code == 0
    git(branch, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    for name in ("CORTEX_REVIEW_ACCEPT", "CORTEX_ACCEPT"):
        env[name] = "any"
    data = verdict(cli("review", "--base", "main"))
    assert data["policy"] == {"accept": "local", "from": "default"}


def test_a_trailer_naming_an_archived_case_judges_it(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    """Archiving a completed case takes it out of the default views, not out of the proof."""
    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    finish(cli, branch, env, task)
    assert verdict(cli("review", "--base", "main"))["verdict"] == "approve"
    assert cli("case", "archive", task).code == 0
    for extra in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *extra))
        assert codes(data) == [], data["problems"]
        assert data["verdict"] == "approve"


def test_a_merge_after_the_verify_is_judged_by_the_merged_tree(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    finish(cli, branch, env, task)
    git(branch, "checkout", "-q", "-b", "other", "main", env=env)
    (branch / "other.py").write_text("print('bad')\n")
    git(branch, "add", "other.py", env=env)
    git(branch, "commit", "-q", "-m", "other", env=env)
    git(branch, "checkout", "-q", "feature", env=env)
    git(branch, "merge", "-q", "--no-edit", "other", env=env)
    data = verdict(cli("review", "--base", "main"))
    assert codes(data) == ["no_proof"], data["problems"]


def test_receipts_copied_from_another_case_are_not_proof(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    """Case A verified the head's code. Case B, which the trailer names, never did: its
    verification.json is replaced by A's (evidence it cites dropped, the plan digest set to
    B's, every digest recomputed) so that audit passes. Nothing of B's ledgers committed that
    batch, so no level but a reproduction may accept it."""
    from conftest import case_path
    from forge import rewrite_last_command

    from cortex.cases.digest import sha256_hex
    from cortex.cases.documents import Verification
    from cortex.cases.records import CaseFile, decode, encode_pretty

    task = ready_to_verify(cli, actor="agent-2")
    (branch / "app.py").write_text("print('bad')\n")
    assert cli("case", "verify", task).code == 2  # B's own proof failed
    done = cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-2",
               "--accept-failed", "later")  # fmt: skip
    assert done.code == 0, done.stdout
    donor = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", donor).code == 0
    git(branch, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    where = case_path(env, task)
    copied = decode((case_path(env, donor) / "verification.json").read_bytes(), Verification)
    case = decode((where / "case.json").read_bytes(), CaseFile)
    copied.revision = case.snapshots["verification"].revision
    for batch in copied.batches:
        batch.plan_sha256 = case.snapshots["plan"].sha256
    for receipt in copied.receipts:
        receipt.evidence = []
        receipt.artifact = None
    data = encode_pretty(copied)
    (where / "verification.json").write_bytes(data)
    from cortex.cases.records import SnapshotRef

    case.snapshots["verification"] = SnapshotRef(revision=copied.revision, sha256=sha256_hex(data))
    rewrite_last_command(where, case)
    assert cli("case", "audit", task).code == 0  # the forgery holds together
    forged = verdict(cli("review", "--base", "main"))
    assert forged["cases"][0]["assessment"] == "verified", forged["problems"]
    assert forged["cases"][0]["provenance"]["origin"] == "unknown"
    assert codes(forged) == ["untrusted_proof"]
    for level in ("remote", "any"):
        assert codes(verdict(cli("review", "--base", "main", "--accept", level))) == [
            "untrusted_proof"
        ]


def test_audit_fails_a_snapshot_whose_revision_tag_is_not_the_one_case_json_records(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    """The gate audits first; a store audit passes must be one readers can read. A snapshot
    whose bytes match case.json's digest but whose revision tag does not is read by no reader
    (they take it for a commit in flight and retry, then answer busy): audit must say so."""
    from conftest import case_path
    from forge import rewrite_last_command

    from cortex.cases.records import CaseFile, decode

    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    finish(cli, branch, env, task)
    where = case_path(env, task)
    case = decode((where / "case.json").read_bytes(), CaseFile)
    case.snapshots["verification"].revision += 1
    rewrite_last_command(where, case)
    assert cli("case", "status", task).code == 6  # no reader can read it
    report = cli("case", "audit", task)
    assert report.code == 4, report.stdout
    data = verdict(cli("review", "--base", "main"))
    assert codes(data) == ["integrity"]


def test_a_hostile_file_name_in_a_verifier_warning_is_shown_inert(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """The warnings name branch files, and a file name can hold terminal controls."""
    (repo / "tests").mkdir()
    (repo / "tests" / "check.py").write_text(CHECK_PY)
    git(repo, "add", "tests", env=env)
    configure_verifiers(repo, env, {"unit": [sys.executable, "tests/check.py", "tests"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    task = ready_to_verify(cli, files=("app.py", "tests"))
    (repo / "tests" / "\x1b[2J\x1b]0;pwned\x07x.py").write_text("")
    (repo / "app.py").write_text("print('fixed')\n")
    git(repo, "add", "tests", env=env)
    finish(cli, repo, env, task)
    data = verdict(cli("review", "--base", "main"))
    assert any("tests/" in w for w in data["warnings"]), data["warnings"]
    for fmt in ("text", "md"):
        shown = cli("review", "--base", "main", "--format", fmt, human=True)
        assert "\x1b" not in shown.stdout + shown.stderr, fmt
        assert "\x07" not in shown.stdout + shown.stderr, fmt


def test_an_mcp_review_runs_no_command_even_when_the_base_accepts_only_reproduced_proof(
    repo: Path, env: dict[str, str], cli: Cli, tmp_path: Path
) -> None:
    """The agent's MCP `cortex_review` reads; reproducing (running commands) is the gate's job."""
    from mcp_kit import envelope_of, raw_server

    runs = tmp_path / "runs.txt"
    counting = [sys.executable, "-c", f"open({str(runs)!r}, 'a').write('ran\\n')"]
    configure_verifiers(repo, env, {"unit": counting})
    with (repo / "cortex.toml").open("a") as toml:
        toml.write('[review]\naccept = "reproduced"\n')
    git(repo, "commit", "-q", "-am", "only reproduced proof", env=env)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    assert runs.read_text().count("ran") == 1
    with raw_server(repo, env, tmp_path) as server:
        envelope, status = envelope_of(server.call("cortex_review", {"base": "main"}))
        assert server.finish() == 0
    assert status == 5
    data = envelope["data"]
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["not_reproduced"]
    assert "cortex review --reproduce" in data["problems"][0]["message"]
    assert runs.read_text().count("ran") == 1  # nothing ran
    assert verdict(cli("review", "--base", "main"))["verdict"] == "approve"
    assert runs.read_text().count("ran") == 2  # the gate reproduced it


def test_a_base_requirement_no_plan_can_name_is_a_configuration_error(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """`require = ["Not A Verifier"]` refused every case for good, with a plan command that fails.

    The name, newlines and terminal controls included, also went into every problem's message.
    """
    branch_requiring(repo, env, {"unit": CHECK}, '["command:unit", "Not A\\nVerifier\\u001b[2J"]')
    configure_verifiers(repo, env, {"unit": CHECK})  # the branch's own file must parse
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    out = cli("review", "--base", "main")
    assert out.code == 4, out.stdout
    assert out.error_code == "config_error"
    message = out.envelope["error"]["message"]
    assert "review.require" in message
    assert "\x1b" not in message
    assert "Verifier" not in message


def test_a_pass_by_acknowledgement_is_named_in_the_verdict(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """The base requires scope; the branch edits outside its boundary and acknowledges the drift.

    The assessment counts an acknowledged pass as a pass and promises every surface names it:
    the verdict read as a plain pass, in every mode, with nothing about the acknowledgement.
    """
    branch_requiring(repo, env, {"unit": CHECK}, '["scope"]')
    task = ready_to_verify(cli, verify=("command:unit", "scope"))
    (repo / "app.py").write_text("print('fixed')\n")
    (repo / "billing.py").write_text("print('outside the boundary')\n")
    git(repo, "add", "billing.py", env=env)
    assert cli("case", "verify", task).envelope["data"]["assessment"]["status"] == "failed"
    out = cli("case", "verify", task, "--ack-drift")
    assert out.envelope["data"]["assessment"]["status"] == "verified", out.stdout
    assert cli("case", "complete", task, "--outcome", "fixed", "--actor", "agent-1").code == 0
    git(repo, "commit", "-q", "-am", f"change\n\nCortex-Case: {task}", env=env)
    for args in ((), ("--reproduce",)):
        data = verdict(cli("review", "--base", "main", *args))
        # A flag for the reviewer, as the assessment counts it: the verdict itself stands.
        assert data["verdict"] == "approve", (args, data["problems"])
        named = [w for w in data["warnings"] if "acknowledgement" in w]
        assert named, (args, data["warnings"])
        assert task in named[0]
        assert "scope (drift)" in named[0]
        assert "[review] require" in named[0]
        shown = cli("review", "--base", "main", *args, human=True).stdout
        assert "acknowledgement" in shown, args


def test_a_required_verifier_only_the_branch_defines_is_not_proof(
    repo: Path, env: dict[str, str], cli: Cli
) -> None:
    """The base requires `command:lint` but defines no lint; the branch defines it as `true`."""
    branch_requiring(repo, env, {"unit": CHECK}, '["command:lint"]')
    with (repo / "cortex.toml").open("a") as toml:
        toml.write('\n[verifiers.lint]\nargv = ["true"]\n')
    git(repo, "commit", "-q", "-am", "the branch's own lint", env=env)
    task = ready_to_verify(cli, verify=("command:unit", "command:lint"))
    (repo / "app.py").write_text("print('fixed')\n")
    finish(cli, repo, env, task)
    for args, code in (
        ((), "verifier_redefined"),
        (("--reproduce",), "not_reproduced"),
        (("--accept", "any"), "verifier_redefined"),
    ):
        data = verdict(cli("review", "--base", "main", *args))
        assert data["verdict"] == "needs_verification", args
        assert codes(data) == [code], args
        assert [r["requirement"] for r in data["redefined"]] == ["command:lint"], args
