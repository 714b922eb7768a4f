"""Shared fixtures: an isolated environment, a real git repository, and ways to run `cortex`.

Tests never touch the developer's real state or configuration: every run gets its own
CORTEX_STATE_DIR, HOME and XDG_CONFIG_HOME under tmp_path. The CLI is run in-process through
`cortex.main.main` (fast, same code path as the console script) or, where a real process
is the point (locks, crashes, concurrency), as `python -m cortex` with the source tree first on
PYTHONPATH, so a stale installed copy can never be what is tested.
"""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stand_ins import answering, leased, remember, without_answer_opt_in

from cortex.main import main

__all__ = ["without_answer_opt_in"]

# Fixtures every MCP test module uses (`served`, `errlog`), defined beside the clients they
# serve; and the watch that keeps the `process` marker true (tests/process_guard.py).
pytest_plugins = ["mcp_kit", "process_guard"]

ROOT = Path(__file__).resolve().parent.parent
CHILDREN = Path(__file__).resolve().parent / "children"

if "MUTANT_UNDER_TEST" in os.environ:
    # A mutation run (docs/testing.md) calls pytest many times in one process, so hypothesis
    # sees a test method run from different class instances, and its instrumentation makes
    # each example slower: neither is a fault of the code under test.
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "mutation", suppress_health_check=[HealthCheck.differing_executors], deadline=None
    )
    settings.load_profile("mutation")

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # A suite started in the background by a shell (`.ci/run &`, nohup) inherits SIGINT
    # ignored, and an ignored signal stays ignored across exec: every cortex the tests start
    # would then shrug off the Ctrl-C the interrupt tests send. Start them as a terminal would.
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _fresh_patterns_under_mutation() -> None:
    """In a mutation run, every test starts with redact's pattern caches empty.

    mutmut forks each mutant from a process that has run the tests already: a pattern cached
    there would stand in for the mutated builder, and no mutant of one would ever be seen
    (docs/testing.md). Outside a mutation run this is one environment lookup.
    """
    if os.environ.get("MUTANT_UNDER_TEST"):
        from cortex.cases import redact

        for value in vars(redact).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def base_env(tmp_path: Path) -> dict[str, str]:
    """A minimal, isolated environment for cortex and git."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CORTEX_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Cortex Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Cortex Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The isolated environment for this test."""
    return base_env(tmp_path)


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    """Run git and return its stdout; fail the test on a non-zero exit."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout.strip()


def make_repo(path: Path, env: dict[str, str]) -> Path:
    """A git repository with one committed file."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    (path / "app.py").write_text("print('hello')\n")
    git(path, "add", "app.py", env=env)
    git(path, "commit", "-q", "-m", "initial", env=env)
    return path


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """A fresh git repository with one commit."""
    return make_repo(tmp_path / "repo", env)


@dataclass
class Outcome:
    """What one cortex invocation produced."""

    code: int
    stdout: str
    stderr: str

    @property
    def envelope(self) -> dict[str, Any]:
        """The JSON envelope (the test fails if stdout is not exactly one)."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"expected one envelope line, got: {self.stdout!r}"
        parsed: dict[str, Any] = json.loads(lines[0])
        return parsed

    @property
    def data(self) -> Any:
        """The envelope's data, asserting success.

        A verify succeeds with exit 0 exactly when its batch verified the case, else exit 2
        (`NOT_VERIFIED`): checked here, on every verify the suite runs.
        """
        envelope = self.envelope
        assert envelope["ok"] is True, envelope
        if envelope["command"] == "case.verify":
            verified = envelope["data"]["assessment"]["status"] == "verified"
            assert self.code == (0 if verified else 2), (self.code, envelope["data"]["assessment"])
        else:
            assert self.code == 0
        return envelope["data"]

    @property
    def error_code(self) -> str:
        """The envelope's error code, asserting failure."""
        envelope = self.envelope
        assert envelope["ok"] is False, envelope
        code: str = envelope["error"]["code"]
        return code


class Cli:
    """Run cortex in-process with the test's environment and working directory.

    It keeps the lease tokens its `begin-change` calls return and opts the test's machine in to
    unattended answers before a `decision answer` (tests/stand_ins.py).
    """

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def __call__(
        self, *args: str, stdin: bytes = b"", cwd: Path | None = None, human: bool = False
    ) -> Outcome:
        """Run one command; `--json` is appended unless `human`."""
        out, err = io.StringIO(), io.StringIO()
        argv = [*args] if human else [*args, "--json"]
        answering(self.env, argv)
        code = main(
            argv,
            env=leased(self.env, argv),
            cwd=str(cwd or self.cwd),
            stdin=io.BytesIO(stdin),
            stdout=out,
            stderr=err,
        )
        if code == 0:
            remember(self.env, argv, out.getvalue())
        return Outcome(code, out.getvalue(), err.getvalue())

    def open(self, goal: str = "Fix the login redirect", *extra: str) -> str:
        """Open a case and return its id."""
        task: str = self("case", "open", goal, *extra).data["taskId"]
        return task


@pytest.fixture
def cli(env: dict[str, str], repo: Path) -> Cli:
    """The in-process CLI, working in `repo`."""
    return Cli(env, repo)


@pytest.fixture
def task(cli: Cli) -> str:
    """An open case in `repo`."""
    return cli.open()


def case_path(env: dict[str, str], task_id: str) -> Path:
    """Where a case lives under the test's state root (searching every store)."""
    matches = list(Path(env["CORTEX_STATE_DIR"]).glob(f"sessions/*/{task_id}"))
    assert len(matches) == 1, matches
    return matches[0]


def run_cortex(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    *,
    stdin: bytes | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m cortex` as a real process (stdin a pipe, never the test's terminal).

    Like `Cli`, it keeps lease tokens and opts the machine in to answers (tests/stand_ins.py).
    """
    answering(env, args)
    proc = subprocess.run(
        [sys.executable, "-m", "cortex", *args],
        cwd=cwd,
        env=leased(env, args),
        input=b"" if stdin is None else stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode == 0:
        remember(env, args, proc.stdout.decode(errors="replace"))
    return proc


@contextmanager
def case_lock_held(cli: Cli, task: str) -> Iterator[None]:
    """Another process holds the case's lock for the duration (writers then get `busy`)."""
    holder = subprocess.Popen(
        [sys.executable, str(CHILDREN / "hold_lock.py"), str(case_path(cli.env, task) / ".lock"),
         "fcntl"],
        env=cli.env,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"held\n"
        yield
    finally:
        holder.kill()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()


def tree_state(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every path under `root` with (size, mtime_ns, inode, mode): compare before and after."""
    state: dict[str, tuple[int, int, int, int]] = {}
    if not root.exists():
        return state
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        state[str(path.relative_to(root))] = (
            info.st_size,
            info.st_mtime_ns,
            info.st_ino,
            info.st_mode,
        )
    return state


def committed_state(
    root: Path, *, ignore: frozenset[str] | set[str] = frozenset()
) -> dict[str, tuple[int, int, int, int]]:
    """`tree_state` of what commits write: without the refusal log, where a refused command
    counts itself outside the case (cortex/cases/refusals.py), and without directories' times
    (a new file shows as its own entry). `ignore` names more files to leave out."""
    skipped = {"refusals.jsonl", *ignore}
    state = {}
    for name, (size, mtime, inode, mode) in tree_state(root).items():
        if Path(name).name in skipped:
            continue
        state[name] = (0, 0, inode, mode) if stat.S_ISDIR(mode) else (size, mtime, inode, mode)
    return state


@pytest.fixture
def state_root(env: dict[str, str]) -> Path:
    """The test's state root."""
    return Path(env["CORTEX_STATE_DIR"])


def configure_verifiers(repo: Path, env: dict[str, str], verifiers: dict[str, list[str]]) -> None:
    """Write `[verifiers.NAME] argv = [...]` tables to the repo's cortex.toml and commit it."""
    lines = []
    for name, argv in verifiers.items():
        lines += [f"[verifiers.{name}]", f"argv = {json.dumps(argv)}", ""]
    (repo / "cortex.toml").write_text("\n".join(lines))
    git(repo, "add", "cortex.toml", env=env)
    git(repo, "commit", "-q", "-m", "configure verifiers", env=env)


def ready_to_verify(
    cli: Cli,
    *,
    verify: tuple[str, ...] = ("command:unit",),
    files: tuple[str, ...] = ("app.py",),
    mode: str = "change",
    risk: str = "medium",
    criteria: tuple[str, ...] = (),
    actor: str = "agent-1",
    lease: bool = True,
) -> str:
    """Open a case and take it to where `verify` may run (changing, or planned when not a change).

    The plan requires `verify`, bounded by `files`; a change task holds the lease as `actor`
    (taken through `cli`, which keeps its token), unless `lease` is False: an MCP server must
    take it itself, since a server holds only the tokens its own calls were given.
    """
    extra = ["--mode", mode, "--risk", risk]
    for criterion in criteria:
        extra += ["--criterion", criterion]
    task = cli.open("Fix the login redirect", *extra)
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    plan = ["case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right"]
    plan += ["--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none"]
    for name in verify:
        plan += ["--verify", name]
    if mode == "change":
        for file in files:
            plan += ["--file", file]
        plan += ["--boundary-reason", "the bug lives here"]
    out = cli(*plan)
    assert out.code == 0, out.stdout
    if mode == "change" and lease:
        out = cli("case", "begin-change", task, "--actor", actor)
        assert out.code == 0, out.stdout
    return task


def add_submodule(repo: Path, upstream: Path, where: str, env: dict[str, str]) -> None:
    """Add `upstream` (a local repository) as a committed submodule of `repo` at `where`."""
    git(
        repo,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(upstream),
        where,
        env=env,
    )
    git(repo, "commit", "-q", "-m", "add submodule", env=env)
