"""`cortex setup claude|codex`: register the MCP server in a host's file, touching nothing else.

Every test works on real files under tmp_path (HOME, CODEX_HOME and the repository are the
test's own) and asserts on their bytes, modes and the exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, ROOT, Cli, run_cortex

from cortex.kernel.host import setup as setup_host
from cortex.kernel.kernel import Kernel

PYTHON = os.path.abspath(sys.executable)
ARGS = ["-m", "cortex", "serve"]
CLAUDE_ENTRY = {"type": "stdio", "command": PYTHON, "args": ARGS, "env": {}}
HOSTILE = 'we"ird \\ dir\nwith\ttabs\x7f ñ 漢 \'\'\' """'


def home(env: dict[str, str]) -> Path:
    return Path(env["HOME"])


def target(env: dict[str, str], repo: Path, host: str, scope: str) -> Path:
    """Where each host and scope is expected to be written (spelled out, not computed)."""
    return {
        ("claude", "project"): repo / ".mcp.json",
        ("claude", "user"): home(env) / ".claude.json",
        ("codex", "user"): home(env) / ".codex" / "config.toml",
        ("codex", "project"): repo / ".codex" / "config.toml",
    }[host, scope]


def registered(path: Path) -> Any:
    """The cortex entry as the host would read it."""
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text("utf-8"))["mcp_servers"]["cortex"]
    return json.loads(path.read_bytes())["mcpServers"]["cortex"]


def snapshot(path: Path) -> tuple[bytes, int, int, int]:
    info = path.stat()
    return path.read_bytes(), info.st_mtime_ns, info.st_ino, stat.S_IMODE(info.st_mode)


def stray_temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".tmp-"))


def run_setup(env: dict[str, str], repo: Path, host: str, **options: Any) -> dict[str, Any]:
    """The kernel use case in-process, for what the command line cannot set (the interpreter)."""
    result = setup_host.setup(Kernel(str(repo), env, default_actor="cli"), host, **options)
    data: dict[str, Any] = result.data
    return data


ALL = [("claude", "project"), ("claude", "user"), ("codex", "user"), ("codex", "project")]
HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


class TestFirstAndSecondRun:
    def test_claude_project_is_the_default_and_writes_exactly_the_entry(
        self, cli: Cli, repo: Path
    ) -> None:
        out = cli("setup", "claude")
        data = out.data
        path = repo / ".mcp.json"
        expected = json.dumps({"mcpServers": {"cortex": CLAUDE_ENTRY}}, indent=2) + "\n"
        assert path.read_bytes() == expected.encode()
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert data == {
            "host": "claude",
            "scope": "project",
            "path": str(path),
            "changed": True,
            "created": True,
            "backup": None,
            "entry": {"command": PYTHON, "args": ARGS},
            "kept": [],
            "dryRun": False,
            # Claude Code reads its tool timeout from its environment, not from this file.
            "toolTimeout": {
                "setting": "MCP_TOOL_TIMEOUT",
                "seconds": 180,
                "written": False,
                "milliseconds": 180000,
                "current": None,
            },
            # In the repository and not committed: it would be the next task's change.
            "files": [
                {
                    "path": str(path),
                    "written": True,
                    "inRepository": True,
                    "changesTree": True,
                    "relative": ".mcp.json",
                    "advice": data["files"][0]["advice"],
                }
            ],
        }
        assert data["files"][0]["advice"].startswith("commit it before you open a case")
        assert out.envelope["actions"][0]["command"] == (
            "git add -- .mcp.json && git commit -m 'Set up Cortex'"
        )
        assert not (repo / ".mcp.json.cortex-backup").exists()

    def test_codex_user_is_the_default_and_private(self, cli: Cli, env: dict[str, str]) -> None:
        data = cli("setup", "codex").data
        path = home(env) / ".codex" / "config.toml"
        assert data["scope"] == "user"
        assert data["path"] == str(path)
        assert [(f["inRepository"], f["changesTree"]) for f in data["files"]] == [(False, False)]
        assert data["files"][0]["advice"] == "outside the repository: nothing to commit"
        assert path.read_text() == (
            f'[mcp_servers.cortex]\ncommand = "{PYTHON}"\nargs = ["-m", "cortex", "serve"]\n'
            "tool_timeout_sec = 180\n"
        )
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0

    @pytest.mark.parametrize(("host", "scope"), ALL)
    def test_a_second_run_changes_no_byte_and_says_so(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str, scope: str
    ) -> None:
        path = target(env, repo, host, scope)
        first = cli("setup", host, "--scope", scope).data
        assert first["changed"] is True
        assert first["path"] == str(path)
        assert registered(path)["command"] == PYTHON
        assert registered(path)["args"] == ARGS
        before = snapshot(path)
        listing = sorted(os.listdir(path.parent))
        second = cli("setup", host, "--scope", scope).data
        assert second["changed"] is False
        assert second["backup"] is None
        assert snapshot(path) == before
        assert sorted(os.listdir(path.parent)) == listing
        text = cli("setup", host, "--scope", scope, human=True)
        assert text.code == 0
        assert "Already registered" in text.stdout
        assert snapshot(path) == before

    def test_the_text_for_people_says_what_happened(self, cli: Cli, repo: Path) -> None:
        created = cli("setup", "claude", human=True)
        assert created.code == 0
        assert "Registered cortex with Claude Code (project scope): created" in created.stdout
        (repo / ".mcp.json").write_text('{"mcpServers": {}}')
        # Long paths wrap at the console width: compare without whitespace.
        updated = "".join(cli("setup", "claude", human=True).stdout.split())
        assert "updated" in updated
        assert f"backup{repo}/.mcp.json.cortex-backup" in updated
        assert f"runs{PYTHON}-mcortexserve" in updated

    def test_codex_home_is_honoured(self, cli: Cli, env: dict[str, str], tmp_path: Path) -> None:
        env["CODEX_HOME"] = str(tmp_path / "codex-home")
        data = cli("setup", "codex").data
        assert data["path"] == str(tmp_path / "codex-home" / "config.toml")
        assert registered(tmp_path / "codex-home" / "config.toml")["command"] == PYTHON
        assert not (home(env) / ".codex").exists()

    def test_a_relative_codex_home_is_refused(self, cli: Cli, env: dict[str, str]) -> None:
        env["CODEX_HOME"] = "relative/dir"
        out = cli("setup", "codex")
        assert out.code == 4
        assert out.error_code == "invalid_input"
        assert not Path(cli.cwd, "relative").exists()

    @pytest.mark.parametrize(
        "argv",
        [
            ["setup", "claude", "--scope", "global"],
            ["setup", "claude", "--scope", "user", "--scope", "project"],
            ["setup", "claude", "--dry-run=yes"],
            ["setup", "cursor"],
            ["setup"],
        ],
    )
    def test_bad_command_lines_are_exit_4_and_write_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path, argv: list[str]
    ) -> None:
        out = cli(*argv)
        assert out.code == 4
        assert out.envelope["ok"] is False
        assert not (repo / ".mcp.json").exists()
        assert not (home(env) / ".claude.json").exists()


class TestExistingFiles:
    def test_other_keys_and_servers_are_kept(self, cli: Cli, env: dict[str, str]) -> None:
        path = home(env) / ".claude.json"
        original = {
            "numStartups": 42,
            "theme": "dark",
            "ratio": 0.1,
            "big": 12345678901234567890,
            "name": "Zoë 漢字",
            "projects": {"/x": {"allowedTools": [], "history": [{"display": "hi"}]}},
            "mcpServers": {"other": {"type": "stdio", "command": "node", "args": ["s.js"]}},
            "zLast": None,
        }
        path.write_text(json.dumps(original))
        path.chmod(0o640)
        data = cli("setup", "claude", "--scope", "user").data
        assert data["changed"] is True
        assert data["created"] is False
        written = path.read_bytes()
        expected = dict(original)
        expected["mcpServers"] = {**original["mcpServers"], "cortex": CLAUDE_ENTRY}  # type: ignore[dict-item]
        assert json.loads(written) == expected
        assert list(json.loads(written)) == list(original)  # key order kept
        assert written == (json.dumps(expected, indent=2, ensure_ascii=False) + "\n").encode()
        assert stat.S_IMODE(path.stat().st_mode) == 0o640

    def test_an_env_set_by_hand_is_kept(self, cli: Cli, repo: Path) -> None:
        path = repo / ".mcp.json"
        env = {"TOKEN": "tok-3141-secret"}
        old = {"type": "stdio", "command": "/old/python", "args": ARGS, "env": env}
        path.write_text(json.dumps({"mcpServers": {"cortex": old}}))
        out = cli("setup", "claude")
        assert out.data["changed"] is True
        assert out.data["kept"] == ["env"]
        assert registered(path) == {**CLAUDE_ENTRY, "env": env}
        assert "tok-3141-secret" not in out.stdout  # the answer never echoes the host's env

    @pytest.mark.parametrize("host", ["claude", "codex"])
    def test_every_key_but_the_owned_ones_is_kept_and_named(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str
    ) -> None:
        path = target(env, repo, host, "project")
        path.parent.mkdir(exist_ok=True)
        if host == "claude":
            old = {"type": "stdio", "command": "/old", "args": [], "timeout": 30000, "cwd": "/srv"}
            path.write_text(json.dumps({"mcpServers": {"cortex": old}}))
        else:
            path.write_text('[mcp_servers.cortex]\ncommand = "/old"\nstartup_timeout_sec = 9\n')
        out = cli("setup", host, "--scope", "project")
        assert out.data["changed"] is True
        entry = registered(path)
        if host == "claude":
            assert out.data["kept"] == ["timeout", "cwd"]  # `env` was added, not kept
            assert entry == {**CLAUDE_ENTRY, "timeout": 30000, "cwd": "/srv"}
        else:
            assert out.data["kept"] == ["startup_timeout_sec"]
            assert entry == {
                "command": PYTHON,
                "args": ARGS,
                "startup_timeout_sec": 9,
                "tool_timeout_sec": 180,
            }
        human = "".join(cli("setup", host, "--scope", "project", human=True).stdout.split())
        assert "kept" + ",".join(out.data["kept"]) in human

    def test_backup_is_written_once_before_the_first_change(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        first_original = b'model = "o3"\n'
        path.write_bytes(first_original)
        path.chmod(0o644)
        backup = path.with_name("config.toml.cortex-backup")
        data = cli("setup", "codex").data
        assert data["backup"] == str(backup)
        assert backup.read_bytes() == first_original
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        backup_state = snapshot(backup)
        # Another change (an older interpreter path) rewrites the file but not the backup.
        path.write_text(path.read_text().replace(PYTHON, "/old/bin/python"))
        data = cli("setup", "codex").data
        assert data["changed"] is True
        assert data["backup"] is None
        assert registered(path)["command"] == PYTHON
        assert snapshot(backup) == backup_state

    def test_a_backup_is_made_where_there_are_no_hard_links(
        self, cli: Cli, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Some FUSE and network file systems refuse link(2): the backup is renamed in instead."""
        path = home(env) / ".claude.json"
        path.write_text('{"theme": "dark"}')

        def no_links(*_args: object) -> None:
            raise OSError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_links)
        out = cli("setup", "claude", "--scope", "user")
        monkeypatch.undo()
        assert out.code == 0, out.stdout
        assert (home(env) / ".claude.json.cortex-backup").read_bytes() == b'{"theme": "dark"}'
        assert stray_temps(home(env)) == []

    def test_a_new_file_gets_no_backup(self, cli: Cli, repo: Path) -> None:
        cli("setup", "codex", "--scope", "project")
        assert sorted(os.listdir(repo / ".codex")) == ["config.toml"]
        assert stat.S_IMODE((repo / ".codex" / "config.toml").stat().st_mode) == 0o644

    @pytest.mark.parametrize(
        ("host", "scope", "content"),
        [
            ("claude", "project", b'{"mcpServers": {'),
            ("claude", "project", b"[1, 2]"),
            ("claude", "user", b'{"mcpServers": []}'),
            ("claude", "user", b'{"mcpServers": null}'),
            ("claude", "user", b'{"a": 1, "a": 2}'),
            ("claude", "user", b'{"a": NaN}'),
            ("claude", "user", b"\xff\xfe{}"),
            ("claude", "user", b""),
            ("codex", "user", b"model = \n"),
            ("codex", "user", b"mcp_servers = 3\n"),
            ("codex", "project", b"[mcp_servers]\ncortex = 1\n"),
            ("codex", "project", b"[a]\nx = 1\n[a]\ny = 2\n"),
        ],
    )
    def test_a_file_that_does_not_parse_is_refused_and_untouched(
        self, cli: Cli, env: dict[str, str], host: str, scope: str, content: bytes
    ) -> None:
        path = target(env, cli.cwd, host, scope)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        before = snapshot(path)
        listing = sorted(os.listdir(path.parent))
        out = cli("setup", host, "--scope", scope)
        assert out.code == 4
        assert out.error_code == "invalid_input"
        assert str(path) in out.envelope["error"]["message"]
        assert snapshot(path) == before
        assert sorted(os.listdir(path.parent)) == listing
        # A dry run refuses it the same way.
        assert cli("setup", host, "--scope", scope, "--dry-run").code == 4

    @pytest.mark.process
    def test_the_refusal_is_exit_4_from_a_real_process(
        self, env: dict[str, str], repo: Path
    ) -> None:
        path = repo / ".mcp.json"
        path.write_bytes(b"{not json")
        done = run_cortex(["setup", "claude"], env, repo)
        assert done.returncode == 4
        assert b"not valid JSON" in done.stderr
        assert path.read_bytes() == b"{not json"


class TestDryRun:
    @pytest.mark.parametrize(("host", "scope"), ALL)
    def test_a_dry_run_creates_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str, scope: str
    ) -> None:
        path = target(env, repo, host, scope)
        existed = path.parent.exists()
        data = cli("setup", host, "--scope", scope, "--dry-run").data
        assert data["dryRun"] is True
        assert data["changed"] is True
        assert data["created"] is True
        assert data["path"] == str(path)
        assert data["entry"]["command"] == PYTHON
        assert data["entry"]["args"] == ARGS
        assert not path.exists()
        assert path.parent.exists() == existed

    def test_a_dry_run_over_an_existing_file_changes_no_byte(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".claude.json"
        path.write_text('{"theme": "dark"}')
        before = snapshot(path)
        out = cli("setup", "claude", "--scope", "user", "--dry-run")
        assert out.data["changed"] is True
        assert out.data["backup"] == str(path) + ".cortex-backup"
        assert snapshot(path) == before
        assert sorted(os.listdir(home(env))) == [".claude.json"]
        text = cli("setup", "claude", "--scope", "user", "--dry-run", human=True).stdout
        assert "Would register" in text
        assert "nothing was written" in text
        assert snapshot(path) == before


class TestToml:
    def test_replacing_an_old_entry_keeps_everything_around_it(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        head = (
            "# my codex settings\n"
            'model = "o3"  # the default\n'
            "\n"
            "[mcp_servers.docs]\n"
            'command = "npx"\n'
            'args = ["-y", "docs-server"]\n'
            "\n"
        )
        ours = (
            "[mcp_servers.cortex]  # added by cortex\n"
            'command = "/old/venv/bin/python"\n'
            "# a comment inside the table\n"
            'args = ["-m", "cortex", "serve"]\n'
            "startup_timeout_sec = 20\n"
        )
        tail = (
            "\n"
            "# environment for the server\n"
            "[mcp_servers.cortex.env]\n"
            'CORTEX_ACTOR = "codex"\n'
            "\n"
            "[profiles.fast]\n"
            'model = "o4-mini"\n'
        )
        path.write_text(head + ours + tail)
        data = cli("setup", "codex").data
        assert data["changed"] is True
        new_ours = (
            "[mcp_servers.cortex]  # added by cortex\n"
            f'command = "{PYTHON}"\n'
            'args = ["-m", "cortex", "serve"]\n'
            "tool_timeout_sec = 180\n"
            "startup_timeout_sec = 20\n"
        )
        assert path.read_text() == head + new_ours + tail
        parsed = tomllib.loads(path.read_text())
        assert parsed["mcp_servers"]["cortex"]["env"] == {"CORTEX_ACTOR": "codex"}
        assert parsed["mcp_servers"]["docs"]["args"] == ["-y", "docs-server"]
        assert path.with_name("config.toml.cortex-backup").read_text() == head + ours + tail

    def test_crlf_files_stay_crlf_and_a_missing_final_newline_is_fine(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        path.write_bytes(b'model = "o3"\r\n[tui]\r\nnotifications = true')
        cli("setup", "codex")
        assert path.read_bytes() == (
            b'model = "o3"\r\n[tui]\r\nnotifications = true\r\n\r\n'
            b"[mcp_servers.cortex]\r\n"
            + f'command = "{PYTHON}"\r\n'.encode()
            + b'args = ["-m", "cortex", "serve"]\r\n'
            + b"tool_timeout_sec = 180\r\n"
        )

    @pytest.mark.parametrize(
        "content",
        [
            '[mcp_servers]\ncortex = { command = "/old/python", args = [] }\n',
            '[mcp_servers]\ncortex.command = "/old/python"\n',
            'mcp_servers.cortex.command = "/old/python"\n',
            '[mcp_servers.cortex]\ncommand = "/old"\n[mcp_servers."cortex"]\nargs = []\n',
            'x = """\n[mcp_servers.cortex]\n"""\n[mcp_servers.cortex]\ncommand = "/old"\n',
        ],
    )
    def test_an_entry_that_cannot_be_edited_as_text_is_refused(
        self, cli: Cli, env: dict[str, str], content: str
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        path.write_text(content)
        before = snapshot(path)
        out = cli("setup", "codex")
        assert out.code in {4, 5}
        assert out.envelope["ok"] is False
        if out.code == 5:
            assert "cannot safely edit" in out.envelope["error"]["message"]
        assert snapshot(path) == before
        assert sorted(os.listdir(path.parent)) == ["config.toml"]

    def test_a_header_written_another_way_is_recognised(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        path.write_text('[ mcp_servers . "cortex" ]\ncommand = "/old"\nargs = []\n')
        cli("setup", "codex")
        assert path.read_text() == (
            f'[ mcp_servers . "cortex" ]\ncommand = "{PYTHON}"\nargs = ["-m", "cortex", "serve"]\n'
            "tool_timeout_sec = 180\n"
        )

    def test_the_header_only_through_a_subtable_is_completed(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """`[mcp_servers.cortex.env]` alone defines the table implicitly: a header is added."""
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        path.write_text('[mcp_servers.cortex.env]\nK = "v"\n')
        cli("setup", "codex")
        entry = registered(path)
        assert entry == {
            "command": PYTHON,
            "args": ARGS,
            "env": {"K": "v"},
            "tool_timeout_sec": 180,
        }

    def test_an_edit_that_would_not_read_back_as_intended_writes_nothing(
        self, env: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The read-back check is the last guard: a wrong rendering is refused, not written."""
        from cortex.kernel.host import toml_edit

        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir()
        path.write_text('model = "o3"\n')
        before = snapshot(path)
        monkeypatch.setattr(toml_edit, "string_text", lambda _value: '"mangled"')
        with pytest.raises(Exception) as caught:
            run_setup(env, repo, "codex")
        assert getattr(caught.value, "code", None) == "refused"
        assert "would change more than" in str(caught.value)
        assert snapshot(path) == before
        assert sorted(os.listdir(path.parent)) == ["config.toml"]


class TestHostilePaths:
    @pytest.mark.parametrize("host", ["claude", "codex"])
    def test_an_interpreter_path_with_quotes_newlines_and_unicode_round_trips(
        self, env: dict[str, str], repo: Path, tmp_path: Path, host: str
    ) -> None:
        interpreter = str(tmp_path / HOSTILE / "bin" / "python")
        data = run_setup(env, repo, host, interpreter=interpreter)
        path = Path(data["path"])
        assert registered(path)["command"] == interpreter
        assert registered(path)["args"] == ARGS
        # And from an old hostile value to a new one (the TOML table is replaced in place).
        newer = str(tmp_path / (HOSTILE + "2") / "python")
        assert run_setup(env, repo, host, interpreter=newer)["changed"] is True
        assert registered(path)["command"] == newer
        again = run_setup(env, repo, host, interpreter=newer)
        assert again["changed"] is False

    def test_an_undecodable_interpreter_path_is_refused(
        self, env: dict[str, str], repo: Path
    ) -> None:
        bad = "/opt/py\udcff/python"
        with pytest.raises(Exception) as caught:
            run_setup(env, repo, "codex", interpreter=bad)
        assert getattr(caught.value, "code", None) == "invalid_input"
        assert not (home(env) / ".codex").exists()

    @pytest.mark.parametrize(("host", "scope"), [("claude", "user"), ("codex", "user")])
    def test_a_hostile_home_works(
        self, cli: Cli, env: dict[str, str], tmp_path: Path, host: str, scope: str
    ) -> None:
        strange = tmp_path / HOSTILE
        strange.mkdir()
        env["HOME"] = str(strange)
        data = cli("setup", host, "--scope", scope).data
        path = target(env, cli.cwd, host, scope)
        assert data["path"] == str(path)
        assert registered(path)["command"] == PYTHON
        assert cli("setup", host, "--scope", scope).data["changed"] is False

    @pytest.mark.process
    def test_a_hostile_interpreter_in_a_real_process(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """`<strange dir>/python -m cortex setup` registers exactly that path."""
        strange = tmp_path / HOSTILE
        strange.mkdir()
        link = strange / "python"
        link.symlink_to(os.path.realpath(sys.executable))
        # A symlinked interpreter outside the venv loses the venv: give it the same packages.
        paths = [str(ROOT), sysconfig.get_paths()["purelib"]]
        proc_env = {**env, "PYTHONPATH": os.pathsep.join(paths)}
        argv = [str(link), "-m", "cortex", "setup", "codex", "--json"]
        done = subprocess.run(argv, cwd=repo, env=proc_env, capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        path = home(env) / ".codex" / "config.toml"
        assert registered(path) == {"command": str(link), "args": ARGS, "tool_timeout_sec": 180}
        before = snapshot(path)
        again = subprocess.run(argv, cwd=repo, env=proc_env, capture_output=True, check=False)
        assert json.loads(again.stdout)["data"]["changed"] is False
        assert snapshot(path) == before


class TestSafety:
    def test_a_symlinked_target_is_refused(self, cli: Cli, repo: Path, tmp_path: Path) -> None:
        real = tmp_path / "elsewhere.json"
        real.write_text('{"keep": true}')
        (repo / ".mcp.json").symlink_to(real)
        out = cli("setup", "claude")
        assert out.code == 5
        assert "symlink" in out.envelope["error"]["message"]
        assert real.read_text() == '{"keep": true}'
        assert (repo / ".mcp.json").is_symlink()
        assert sorted(p.name for p in repo.iterdir() if p.name.startswith(".mcp")) == [".mcp.json"]

    def test_a_dangling_symlink_is_refused_too(self, cli: Cli, env: dict[str, str]) -> None:
        (home(env) / ".claude.json").symlink_to(home(env) / "missing.json")
        assert cli("setup", "claude", "--scope", "user").code == 5
        assert not (home(env) / "missing.json").exists()

    @pytest.mark.parametrize("scope", ["project", "user"])
    def test_a_symlinked_codex_directory_is_refused(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, scope: str
    ) -> None:
        planted = tmp_path / "planted"
        planted.mkdir()
        base = repo if scope == "project" else home(env)
        (base / ".codex").symlink_to(planted, target_is_directory=True)
        out = cli("setup", "codex", "--scope", scope)
        assert out.code == 5
        assert ".codex is a symlink" in out.envelope["error"]["message"]
        assert list(planted.iterdir()) == []

    @pytest.mark.parametrize("existing", [True, False])
    def test_a_failure_before_the_rename_leaves_the_original(
        self, cli: Cli, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, existing: bool
    ) -> None:
        path = home(env) / ".claude.json"
        original = b'{"theme": "dark"}'
        if existing:
            path.write_bytes(original)

        def refuse(*_args: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", refuse)
        out = cli("setup", "claude", "--scope", "user")
        monkeypatch.undo()
        assert out.code == 1
        assert stray_temps(home(env)) == []
        if existing:
            assert path.read_bytes() == original
            # The backup was taken before the attempt; it is the original, whole.
            assert (home(env) / ".claude.json.cortex-backup").read_bytes() == original
        else:
            assert not path.exists()
        # Nothing is left half-done: the next run succeeds.
        assert cli("setup", "claude", "--scope", "user").data["changed"] is True
        assert registered(path)["command"] == PYTHON

    @pytest.mark.process
    def test_only_the_temp_files_of_finished_runs_are_removed(self, cli: Cli, repo: Path) -> None:
        """A killed run's temp file goes; a live run's, or another file's, stays."""
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()  # reaped: its pid names no process now
        names = {
            "dead": f".tmp-.mcp.json-{dead.pid}-0123abcd",
            "dead-backup": f".tmp-.mcp.json.cortex-backup-{dead.pid}-0123abcd",
            "live": f".tmp-.mcp.json-{dead.pid}-4567cdef",  # the pid says nothing; the lock does
            "other-file": f".tmp-other.json-{dead.pid}-0123abcd",
        }
        for name in names.values():
            (repo / name).write_text("{}")
        # A live run is one that holds the lock on its temp file, as every writer does.
        live = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(repo / names["live"])], stdout=subprocess.PIPE
        )
        try:
            assert live.stdout is not None
            assert live.stdout.readline() == b"held\n"
            (repo / ".mcp.json").write_text("{}")
            assert cli("setup", "claude", "--dry-run").code == 0
            assert len(stray_temps(repo)) == 4  # a dry run writes and removes nothing
            assert cli("setup", "claude").code == 0
            assert stray_temps(repo) == sorted([names["live"], names["other-file"]])
        finally:
            live.kill()
            live.communicate()

    def test_a_file_rewritten_by_the_host_meanwhile_is_not_clobbered(
        self, env: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If the host saves its file between our read and our rename, we start over."""
        path = home(env) / ".claude.json"
        path.write_text('{"numStartups": 1}')
        real_current = setup_host._current
        calls = {"n": 0}

        def host_saves_once(name: str) -> bytes | None:
            calls["n"] += 1
            if calls["n"] == 3:  # after the read and the backup check: just before the rename
                path.write_text('{"numStartups": 2}')
            return real_current(name)

        monkeypatch.setattr(setup_host, "_current", host_saves_once)
        data = run_setup(env, repo, "claude", scope="user")
        assert data["changed"] is True
        assert json.loads(path.read_bytes()) == {
            "numStartups": 2,
            "mcpServers": {"cortex": CLAUDE_ENTRY},
        }
        assert stray_temps(home(env)) == []


class TestRealProcess:
    @pytest.mark.process
    def test_setup_then_again_through_python_dash_m(self, env: dict[str, str], repo: Path) -> None:
        done = run_cortex(["setup", "claude", "--json"], env, repo)
        assert done.returncode == 0, done.stderr
        envelope = json.loads(done.stdout)
        assert envelope["command"] == "setup.claude"
        assert envelope["data"]["changed"] is True
        path = repo / ".mcp.json"
        assert registered(path) == CLAUDE_ENTRY
        before = snapshot(path)
        again = run_cortex(["setup", "claude"], env, repo)
        assert again.returncode == 0
        assert b"Already registered" in again.stdout
        assert snapshot(path) == before


UNSHARE = ["unshare", "--user", "--pid", "--fork", "--map-root-user", "--mount-proc"]
# The namespace's init (this sh, pid 1 there) starts the writer at the pid after the one it is
# given. The pid is chosen free outside, so there kill(pid, 0) says "no such process" while the
# writer runs: what a PID check sees of a writer in another container. The trailing `exit`
# keeps sh from exec-ing the writer in its own place (as pid 1).
IN_NAMESPACE = 'echo "$1" > /proc/sys/kernel/ns_last_pid 2>/dev/null; shift; "$@"; exit $?'


def free_pid() -> int:
    """A pid no process has here (and, below the default pid_max, one a namespace can give)."""
    for pid in range(30000, 1000, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    pytest.skip("no free pid below 30000 to give the writer")


def require_pid_namespaces() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed, so the writer cannot run in its own namespace")
    probe = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30, check=False)
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip()
        pytest.skip(f"unshare cannot create a user and PID namespace here ({reason})")


def wait_for_group_to_end(pgid: int) -> None:
    """Until no process of the group is left (a SIGKILL takes effect asynchronously)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


class TestStaleTempsAcrossPidNamespaces:
    def test_a_live_writers_temp_stays_and_a_killed_writers_goes(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """The writer runs in its own PID namespace, paused with its temp file written.

        Another run must leave that temp alone, whatever the writer's pid means here; once the
        writer is killed, the next run removes it.
        """
        require_pid_namespaces()
        pid = free_pid()
        commands = json.dumps([["setup", "claude"]])
        child = [sys.executable, str(CHILDREN / "crash_child.py"), "snapshot.tmp_synced", "0"]
        writer = subprocess.Popen(
            [*UNSHARE, "sh", "-c", IN_NAMESPACE, "sh", str(pid - 1), *child, str(repo), commands],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        watchdog = threading.Timer(60, os.killpg, (writer.pid, signal.SIGKILL))
        watchdog.start()
        try:
            assert writer.stdout is not None
            line = writer.stdout.readline()
            if line != b"AT snapshot.tmp_synced\n":
                os.killpg(writer.pid, signal.SIGKILL)
                _, err = writer.communicate()
                pytest.fail(f"the writer did not pause: {line!r} {err.decode(errors='replace')}")
            [live] = stray_temps(repo)
            assert cli("setup", "claude").data["changed"] is True
            assert stray_temps(repo) == [live]
        finally:
            watchdog.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(writer.pid, signal.SIGKILL)
            writer.communicate()
            wait_for_group_to_end(writer.pid)
        assert stray_temps(repo) == [live]  # a killed writer leaves its temp behind
        assert cli("setup", "claude").data["changed"] is False
        assert stray_temps(repo) == []


class TestToolTimeout:
    """Hosts give up on a tool call after their own timeout; a verify needs its verifiers' time."""

    def verifiers(self, repo: Path, timeouts: dict[str, int]) -> None:
        lines = []
        for name, seconds in timeouts.items():
            lines += [f"[verifiers.{name}]", 'argv = ["true"]', f"timeout = {seconds}", ""]
        (repo / "cortex.toml").write_text("\n".join(lines))

    def test_codex_waits_for_every_verifier_in_turn_plus_a_margin(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        self.verifiers(repo, {"unit": 300, "lint": 100})
        data = cli("setup", "codex").data
        assert data["entry"]["tool_timeout_sec"] == 300 + 100 + setup_host.TOOL_TIMEOUT_MARGIN
        assert data["toolTimeout"] == {
            "setting": "tool_timeout_sec",
            "seconds": 460,
            "written": True,
        }
        assert registered(home(env) / ".codex" / "config.toml")["tool_timeout_sec"] == 460
        text = cli("setup", "codex", human=True).stdout
        assert "tool_timeout_sec = 460" in text

    def test_a_longer_timeout_a_person_set_is_kept_a_shorter_one_raised(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir(parents=True)
        entry = f'command = "{PYTHON}"\nargs = ["-m", "cortex", "serve"]\n'
        path.write_text(f"[mcp_servers.cortex]\n{entry}tool_timeout_sec = 3600\n")
        data = cli("setup", "codex").data
        assert data["changed"] is False
        assert registered(path)["tool_timeout_sec"] == 3600
        path.write_text(f"[mcp_servers.cortex]\n{entry}tool_timeout_sec = 30\n")
        assert cli("setup", "codex").data["changed"] is True
        assert registered(path)["tool_timeout_sec"] == 180

    def test_claude_is_told_what_to_set_where_it_reads_it(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        self.verifiers(repo, {"unit": 600})
        env["MCP_TOOL_TIMEOUT"] = "60000"
        data = cli("setup", "claude").data
        assert "tool_timeout_sec" not in data["entry"]
        assert data["toolTimeout"] == {
            "setting": "MCP_TOOL_TIMEOUT",
            "seconds": 660,
            "written": False,
            "milliseconds": 660000,
            "current": "60000",
        }
        assert registered(repo / ".mcp.json") == CLAUDE_ENTRY
        text = cli("setup", "claude", human=True).stdout
        assert "MCP_TOOL_TIMEOUT=660000" in text
