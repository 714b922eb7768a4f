"""Machines for the sharing tests: each a state root, a home and a clone of one bare remote.

A "machine" is what another computer would be: its own CORTEX_STATE_DIR (so its own replica
id and case store), its own HOME and configuration, and its own clone of the project. They
share only the bare `file://` remote, as two computers share only the project's server.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import Cli, Outcome, base_env, git

SHARE_TOML = '[share]\nenabled = true\nremote = "origin"\n'


@dataclass
class Machine:
    """One computer: its environment, its clone and the CLI running there."""

    name: str
    root: Path
    env: dict[str, str]
    repo: Path
    cli: Cli

    def __call__(self, *args: str, stdin: bytes = b"") -> Outcome:
        """Run one cortex command here (in-process, `--json`)."""
        return self.cli(*args, stdin=stdin)

    def ok(self, *args: str, stdin: bytes = b"") -> Any:
        """Run one command and return its data, failing the test on a refusal."""
        out = self.cli(*args, stdin=stdin)
        assert out.code == 0, f"{self.name}: {args}: {out.stdout}{out.stderr}"
        return out.data

    def git(self, *args: str) -> str:
        """Run git in this machine's clone."""
        return git(self.repo, *args, env=self.env)

    def evidence(self, task: str) -> list[str]:
        """The ids of every evidence record this machine's merged view holds, in order."""
        items = []
        cursor: str | None = None
        while True:
            args = ["case", "timeline", task, "--kind", "evidence", "--limit", "500"]
            if cursor:
                args += ["--cursor", cursor]
            page = self.ok(*args)
            items += [entry["id"] for entry in page["entries"]]
            cursor = page["nextCursor"]
            if not cursor:
                return items


def make_remote(tmp_path: Path, *, enabled: bool = True) -> Path:
    """A bare repository with one commit on main (app.py, and cortex.toml opting in)."""
    (tmp_path / "_seed").mkdir(exist_ok=True)
    env = base_env(tmp_path / "_seed")
    seed = tmp_path / "_seed" / "work"
    seed.mkdir()
    git(seed, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    (seed / "app.py").write_text("print('hello')\n")
    files = ["app.py"]
    if enabled:
        (seed / "cortex.toml").write_text(SHARE_TOML)
        files.append("cortex.toml")
    git(seed, "add", *files, env=env)
    git(seed, "commit", "-q", "-m", "initial", env=env)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote), env=env)
    return remote


def make_machine(tmp_path: Path, name: str, remote: Path) -> Machine:
    """A machine with its own state root and a clone of `remote` (as `origin`)."""
    root = tmp_path / name
    root.mkdir()
    env = base_env(root)
    repo = root / "repo"
    git(root, "clone", "-q", f"file://{remote}", str(repo), env=env)
    return Machine(name, root, env, repo, Cli(env, repo))


def copy_machine(tmp_path: Path, source: Machine, name: str) -> Machine:
    """Another computer made by copying `source`'s state directory and clone (a fork)."""
    root = tmp_path / name
    root.mkdir()
    env = base_env(root)
    state = Path(env["CORTEX_STATE_DIR"])
    shutil.copytree(Path(source.env["CORTEX_STATE_DIR"]), state)
    repo = root / "repo"
    shutil.copytree(source.repo, repo)
    # The copy's clone has another path, hence another store id: point it at the copied store,
    # as a restored CI cache (same checkout path) would find it by itself.
    (store,) = {p.parent for p in state.glob("sessions/*/task_*")}
    env["CORTEX_CASES_DIR"] = str(store)
    return Machine(name, root, env, repo, Cli(env, repo))


def remote_objects(remote: Path, env: dict[str, str]) -> set[str]:
    """Every object id reachable from any ref of the remote."""
    out = git(remote, "rev-list", "--objects", "--all", env=env)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def reachable(remote: Path, env: dict[str, str], pattern: str) -> set[str]:
    """Every object id reachable from the remote's refs matching `pattern`."""
    refs = git(remote, "for-each-ref", "--format=%(objectname)", pattern, env=env).split()
    if not refs:
        return set()
    out = git(remote, "rev-list", "--objects", *refs, env=env)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def every_object(repository: Path, env: dict[str, str]) -> bytes:
    """The content of every object the repository stores, reachable or not, concatenated."""
    proc = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch", "--unordered"],
        cwd=repository,
        env=env,
        capture_output=True,
        check=True,
    )
    return proc.stdout


def case_objects(repository: Path, env: dict[str, str]) -> bytes:
    """The content of every object reachable from a case ref, decompressed, concatenated."""
    ids = reachable(repository, env, "refs/cortex/")
    if not ids:
        return b""
    proc = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repository,
        env=env,
        input="".join(f"{i}\n" for i in sorted(ids)).encode(),
        capture_output=True,
        check=True,
    )
    return proc.stdout


def remote_refs(remote: Path, env: dict[str, str]) -> dict[str, str]:
    """ref name -> object id on the remote."""
    out = git(remote, "for-each-ref", "--format=%(refname) %(objectname)", env=env)
    pairs = [line.split() for line in out.splitlines() if line.strip()]
    return dict(pairs)


def commit_code(machine: Machine, text: str, *trailers: str) -> str:
    """Change app.py and commit it (with trailers); return the commit id."""
    (machine.repo / "app.py").write_text(text)
    machine.git("add", "app.py")
    args = ["commit", "-q", "-m", "change app.py"]
    for trailer in trailers:
        args += ["--trailer", trailer]
    machine.git(*args)
    return machine.git("rev-parse", "HEAD")
