"""`cortex setup claude|codex`: register the MCP server and install the hook set in a host's files,
touching nothing else.

Every test works on real files under tmp_path (HOME, CODEX_HOME and the repository are the
test's own) and asserts on their bytes, modes and the exit status. tests/test_host_setup.py
holds the hook set's own tests (ours and theirs, --remove, the program forms, the plugin).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
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

import pytest
from conftest import CHILDREN, ROOT, Cli, run_cortex
from setup_kit import (
    ALL,
    ARGS,
    CLAUDE_ENTRY,
    HOOK_SET,
    HOSTILE,
    MODULE_ARGS,
    TIMEOUT_MS,
    digest,
    home,
    hooks_file,
    hooks_target,
    installed_commands,
    registered,
    run_setup,
    snapshot,
    stray_temps,
    target,
)

from cortex.kernel.host import setup as setup_host
from cortex.kernel.host import writing


@pytest.fixture
def env(env: dict[str, str]) -> dict[str, str]:
    """The test's environment with this installation's `cortex` first on PATH, as after `pipx
    install` or in an activated virtualenv (tests/test_host_setup.py covers the other forms)."""
    return {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]}


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
        settings = repo / ".claude" / "settings.json"
        expected = json.dumps({"mcpServers": {"cortex": CLAUDE_ENTRY}}, indent=2) + "\n"
        assert path.read_bytes() == expected.encode()
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert settings.read_bytes() == hooks_file("claude")
        assert stat.S_IMODE(settings.stat().st_mode) == 0o644
        events = ", ".join(event for event, _, _ in HOOK_SET["claude"])
        shown = f"cortex hook EVENT --template {digest('claude')}"
        advice = data["files"][0]["advice"]
        assert data == {
            "host": "claude",
            "scope": "project",
            "path": str(path),
            "changed": True,
            "created": True,
            "backup": None,
            "entry": {"command": "cortex", "args": ARGS},
            "kept": [],
            "dryRun": False,
            "removed": False,
            "program": {"form": "path", "path": "cortex"},
            "hooks": {
                "path": str(settings),
                "changed": True,
                "created": True,
                "backup": None,
                "template": digest("claude"),
            },
            "changes": [
                f"{path}: cortex server runs `cortex serve`",
                f"{settings}: hooks {events} run `{shown}`",
                f"{settings}: env.MCP_TOOL_TIMEOUT = {TIMEOUT_MS} (ms)",
            ],
            # Claude Code reads its tool timeout from the settings file's env, beside the hooks.
            "toolTimeout": {
                "setting": "env.MCP_TOOL_TIMEOUT",
                "seconds": 180,
                "written": True,
                "milliseconds": 180000,
            },
            # In the repository and not committed: each would be the next task's change.
            "files": [
                {
                    "path": str(path),
                    "written": True,
                    "inRepository": True,
                    "changesTree": True,
                    "relative": ".mcp.json",
                    "advice": advice,
                },
                {
                    "path": str(settings),
                    "written": True,
                    "inRepository": True,
                    "changesTree": True,
                    "relative": ".claude/settings.json",
                    "advice": advice,
                },
            ],
        }
        assert advice.startswith("commit it before you open a case")
        assert out.envelope["actions"][0]["command"] == (
            "git add -- .mcp.json .claude/settings.json && git commit -m 'Set up Cortex'"
        )
        assert sorted(os.listdir(repo)) == [".claude", ".git", ".mcp.json", "app.py"]
        assert os.listdir(repo / ".claude") == ["settings.json"]

    def test_codex_user_is_the_default_and_private(self, cli: Cli, env: dict[str, str]) -> None:
        data = cli("setup", "codex").data
        path = home(env) / ".codex" / "config.toml"
        hooks = home(env) / ".codex" / "hooks.json"
        assert data["scope"] == "user"
        assert data["path"] == str(path)
        assert data["hooks"]["path"] == str(hooks)
        assert data["program"] == {"form": "path", "path": "cortex"}
        assert [(f["path"], f["inRepository"], f["changesTree"]) for f in data["files"]] == [
            (str(path), False, False),
            (str(hooks), False, False),
        ]
        assert {f["advice"] for f in data["files"]} == {"outside the repository: nothing to commit"}
        # Codex's timeout is the entry's; its hooks file holds the hooks and nothing else.
        assert data["toolTimeout"] == {
            "setting": "tool_timeout_sec",
            "seconds": 180,
            "written": True,
        }
        assert path.read_text() == (
            '[mcp_servers.cortex]\ncommand = "cortex"\nargs = ["serve"]\ntool_timeout_sec = 180\n'
        )
        assert hooks.read_bytes() == hooks_file("codex")
        for written in (path, hooks):
            assert stat.S_IMODE(written.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
        assert sorted(os.listdir(path.parent)) == ["config.toml", "hooks.json"]

    @pytest.mark.parametrize(("host", "scope"), ALL)
    def test_a_second_run_changes_no_byte_and_says_so(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str, scope: str
    ) -> None:
        path = target(env, repo, host, scope)
        hooks = hooks_target(env, repo, host, scope)
        first = cli("setup", host, "--scope", scope).data
        assert first["changed"] is True
        assert first["hooks"]["changed"] is True
        assert first["path"] == str(path)
        assert first["hooks"]["path"] == str(hooks)
        assert registered(path)["command"] == "cortex"
        assert registered(path)["args"] == ARGS
        assert hooks.read_bytes() == hooks_file(host)
        before = (snapshot(path), snapshot(hooks))
        listings = (sorted(os.listdir(path.parent)), sorted(os.listdir(hooks.parent)))
        second = cli("setup", host, "--scope", scope).data
        assert second["changed"] is False
        assert second["backup"] is None
        assert second["hooks"] == {**first["hooks"], "changed": False, "created": False}
        assert second["changes"] == []
        assert [f["written"] for f in second["files"]] == [False, False]
        assert (snapshot(path), snapshot(hooks)) == before
        assert (sorted(os.listdir(path.parent)), sorted(os.listdir(hooks.parent))) == listings
        text = cli("setup", host, "--scope", scope, human=True)
        assert text.code == 0
        assert "Already set up" in text.stdout
        assert (snapshot(path), snapshot(hooks)) == before

    def test_the_text_for_people_says_what_happened(self, cli: Cli, repo: Path) -> None:
        created = cli("setup", "claude", human=True)
        assert created.code == 0
        assert "Set up cortex with Claude Code (project scope)" in created.stdout
        (repo / ".mcp.json").write_text('{"mcpServers": {}}')
        # Long paths wrap at the console width: compare without whitespace.
        updated = "".join(cli("setup", "claude", human=True).stdout.split())
        assert f"change{repo}/.mcp.json:cortexserverruns`cortexserve`" in updated
        assert f"backup{repo}/.mcp.json.cortex-backup" in updated
        assert "runscortexserve" in updated
        assert f"hooks{repo}/.claude/settings.json(template{digest('claude')})" in updated
        # The hooks were current already: no change is claimed for them.
        assert "settings.json:hooks" not in updated

    def test_codex_home_is_honoured(self, cli: Cli, env: dict[str, str], tmp_path: Path) -> None:
        env["CODEX_HOME"] = str(tmp_path / "codex-home")
        data = cli("setup", "codex").data
        assert data["path"] == str(tmp_path / "codex-home" / "config.toml")
        assert data["hooks"]["path"] == str(tmp_path / "codex-home" / "hooks.json")
        assert registered(tmp_path / "codex-home" / "config.toml")["command"] == "cortex"
        assert (tmp_path / "codex-home" / "hooks.json").read_bytes() == hooks_file("codex")
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
            ["setup", "claude", "--remove=yes"],
            ["setup", "codex", "--plugin", "plugin-dir"],  # a plugin is Claude Code's only
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
        assert sorted(os.listdir(repo)) == [".git", "app.py"]
        assert sorted(os.listdir(home(env))) == []


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
                "command": "cortex",
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
        assert data["hooks"]["backup"] is None  # hooks.json is new: nothing to keep
        assert backup.read_bytes() == first_original
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        backup_state = snapshot(backup)
        # Another change (an older program path) rewrites the file but not the backup.
        old = path.read_text()
        assert 'command = "cortex"' in old
        path.write_text(old.replace('command = "cortex"', 'command = "/old/bin/cortex"'))
        data = cli("setup", "codex").data
        assert data["changed"] is True
        assert data["backup"] is None
        assert data["hooks"]["changed"] is False
        assert registered(path)["command"] == "cortex"
        assert snapshot(backup) == backup_state
        assert sorted(os.listdir(path.parent)) == [
            "config.toml",
            "config.toml.cortex-backup",
            "hooks.json",
        ]

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
        data = cli("setup", "codex", "--scope", "project").data
        assert (data["backup"], data["hooks"]["backup"]) == (None, None)
        assert sorted(os.listdir(repo / ".codex")) == ["config.toml", "hooks.json"]
        assert stat.S_IMODE((repo / ".codex" / "config.toml").stat().st_mode) == 0o644
        assert stat.S_IMODE((repo / ".codex" / "hooks.json").stat().st_mode) == 0o644

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
        # Both files are composed before either is written: the hook set is not installed.
        assert not hooks_target(env, cli.cwd, host, scope).exists()
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
        hooks = hooks_target(env, repo, host, scope)
        existed = (path.parent.exists(), hooks.parent.exists())
        data = cli("setup", host, "--scope", scope, "--dry-run").data
        assert data["dryRun"] is True
        assert data["changed"] is True
        assert data["created"] is True
        assert data["path"] == str(path)
        assert data["entry"]["command"] == "cortex"
        assert data["entry"]["args"] == ARGS
        assert data["hooks"]["path"] == str(hooks)
        assert (data["hooks"]["changed"], data["hooks"]["created"]) == (True, True)
        # Each change is listed, though none is made.
        assert [line.split(": ", 1)[0] for line in data["changes"]] == [
            str(path),
            str(hooks),
            *([str(hooks)] if host == "claude" else []),
        ]
        assert data["files"] == []
        assert not path.exists()
        assert not hooks.exists()
        assert (path.parent.exists(), hooks.parent.exists()) == existed

    def test_a_dry_run_over_existing_files_changes_no_byte(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".claude.json"
        path.write_text('{"theme": "dark"}')
        settings = home(env) / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text('{"model": "opus"}')
        before = (snapshot(path), snapshot(settings))
        out = cli("setup", "claude", "--scope", "user", "--dry-run")
        assert out.data["changed"] is True
        assert out.data["created"] is False
        assert (out.data["hooks"]["changed"], out.data["hooks"]["created"]) == (True, False)
        assert len(out.data["changes"]) == 3
        assert [f["written"] for f in out.data["files"]] == [False, False]
        assert (snapshot(path), snapshot(settings)) == before
        assert sorted(os.listdir(home(env))) == [".claude", ".claude.json"]
        assert os.listdir(settings.parent) == ["settings.json"]
        text = cli("setup", "claude", "--scope", "user", "--dry-run", human=True).stdout
        assert "Would set up" in text
        assert "nothing was written" in text
        assert (snapshot(path), snapshot(settings)) == before

    def test_a_dry_run_says_where_it_would_back_up(self, cli: Cli, env: dict[str, str]) -> None:
        path = home(env) / ".claude.json"
        path.write_text('{"theme": "dark"}')
        settings = home(env) / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text('{"model": "opus"}')
        data = cli("setup", "claude", "--scope", "user", "--dry-run").data
        assert data["backup"] == str(path) + ".cortex-backup"
        assert data["hooks"]["backup"] == str(settings) + ".cortex-backup"
        assert not Path(data["backup"]).exists()


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
            'command = "cortex"\n'
            'args = ["serve"]\n'
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
            b'command = "cortex"\r\n'
            b'args = ["serve"]\r\n'
            b"tool_timeout_sec = 180\r\n"
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
            '[ mcp_servers . "cortex" ]\ncommand = "cortex"\nargs = ["serve"]\n'
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
            "command": "cortex",
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
        """No `cortex` script beside it, not on PATH: user scope runs `<python> -m cortex`."""
        interpreter = str(tmp_path / HOSTILE / "bin" / "python")
        data = run_setup(env, repo, host, scope="user", interpreter=interpreter)
        path = Path(data["path"])
        hooks = hooks_target(env, repo, host, "user")
        assert data["program"] == {"form": "absolute", "path": interpreter}
        assert registered(path)["command"] == interpreter
        assert registered(path)["args"] == MODULE_ARGS
        assert hooks.read_bytes() == hooks_file(host, f"{shlex.quote(interpreter)} -m cortex")
        # The shell the host runs a hook with reads the path back exactly.
        flag = [] if host == "claude" else ["--host", host]
        for event, commands in installed_commands(hooks).items():
            assert [shlex.split(c) for c in commands] == [
                [interpreter, "-m", "cortex", "hook", event, *flag, "--template", digest(host)]
            ]
        # And from an old hostile value to a new one (the TOML table is replaced in place).
        newer = str(tmp_path / (HOSTILE + "2") / "python")
        moved = run_setup(env, repo, host, scope="user", interpreter=newer)
        assert (moved["changed"], moved["hooks"]["changed"]) == (True, True)
        assert registered(path)["command"] == newer
        assert hooks.read_bytes() == hooks_file(host, f"{shlex.quote(newer)} -m cortex")
        before = (snapshot(path), snapshot(hooks))
        again = run_setup(env, repo, host, scope="user", interpreter=newer)
        assert (again["changed"], again["hooks"]["changed"]) == (False, False)
        assert (snapshot(path), snapshot(hooks)) == before

    @pytest.mark.parametrize("host", ["claude", "codex"])
    def test_a_project_scope_that_could_only_name_the_interpreter_is_refused(
        self, env: dict[str, str], repo: Path, tmp_path: Path, host: str
    ) -> None:
        """A committed file must not hold this machine's path: refused (5), nothing written."""
        interpreter = str(tmp_path / HOSTILE / "bin" / "python")
        with pytest.raises(Exception) as caught:
            run_setup(env, repo, host, scope="project", interpreter=interpreter)
        assert getattr(caught.value, "code", None) == "refused"
        assert "--scope user" in str(caught.value)
        assert sorted(os.listdir(repo)) == [".git", "app.py"]
        assert sorted(os.listdir(home(env))) == []

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
        hooks = hooks_target(env, cli.cwd, host, scope)
        assert data["path"] == str(path)
        assert data["hooks"]["path"] == str(hooks)
        assert registered(path)["command"] == "cortex"
        assert hooks.read_bytes() == hooks_file(host)
        before = (snapshot(path), snapshot(hooks))
        again = cli("setup", host, "--scope", scope).data
        assert (again["changed"], again["hooks"]["changed"]) == (False, False)
        assert (snapshot(path), snapshot(hooks)) == before

    @pytest.mark.process
    def test_a_hostile_interpreter_in_a_real_process(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """`<strange dir>/python -m cortex setup` registers exactly that path (user scope only)."""
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
        hooks = home(env) / ".codex" / "hooks.json"
        assert registered(path) == {
            "command": str(link),
            "args": MODULE_ARGS,
            "tool_timeout_sec": 180,
        }
        assert hooks.read_bytes() == hooks_file("codex", f"{shlex.quote(str(link))} -m cortex")
        before = (snapshot(path), snapshot(hooks))
        again = subprocess.run(argv, cwd=repo, env=proc_env, capture_output=True, check=False)
        data = json.loads(again.stdout)["data"]
        assert (data["changed"], data["hooks"]["changed"]) == (False, False)
        assert (snapshot(path), snapshot(hooks)) == before
        # The same interpreter may not go into a committed, project-scope file.
        refused = [str(link), "-m", "cortex", "setup", "claude", "--json"]
        done = subprocess.run(refused, cwd=repo, env=proc_env, capture_output=True, check=False)
        assert done.returncode == 5, done.stderr
        assert json.loads(done.stdout)["error"]["code"] == "refused"
        assert sorted(os.listdir(repo)) == [".git", "app.py"]


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
        # The server entry is written first: its failure stops before the hooks file.
        assert not (home(env) / ".claude").exists()
        # Nothing is left half-done: the next run succeeds.
        again = cli("setup", "claude", "--scope", "user").data
        assert (again["changed"], again["hooks"]["changed"]) == (True, True)
        assert registered(path)["command"] == "cortex"
        assert (home(env) / ".claude" / "settings.json").read_bytes() == hooks_file("claude")

    @pytest.mark.parametrize("existing", [True, False])
    def test_a_failure_writing_the_hooks_file_is_completed_by_the_next_run(
        self, cli: Cli, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, existing: bool
    ) -> None:
        """Two files cannot be replaced at once: each stays whole, and a second run finishes."""
        settings = home(env) / ".claude" / "settings.json"
        original = b'{"model": "opus"}'
        if existing:
            settings.parent.mkdir()
            settings.write_bytes(original)
        real_replace = os.replace

        def refuse_the_hooks_file(source: str, destination: str) -> None:
            if os.path.basename(destination) == "settings.json":
                raise OSError(28, "No space left on device")
            real_replace(source, destination)

        monkeypatch.setattr(os, "replace", refuse_the_hooks_file)
        out = cli("setup", "claude", "--scope", "user")
        monkeypatch.undo()
        assert out.code == 1
        assert registered(home(env) / ".claude.json") == CLAUDE_ENTRY
        assert stray_temps(home(env)) == []
        if existing:
            assert settings.read_bytes() == original
            assert settings.with_name("settings.json.cortex-backup").read_bytes() == original
            assert stray_temps(settings.parent) == []
        else:
            assert not settings.exists()
        again = cli("setup", "claude", "--scope", "user").data
        assert (again["changed"], again["hooks"]["changed"]) == (False, True)
        expected = {"model": "opus"} if existing else {}
        expected |= json.loads(hooks_file("claude"))
        assert json.loads(settings.read_bytes()) == expected

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

    @pytest.mark.parametrize("name", [".claude.json", "settings.json"])
    def test_a_file_rewritten_by_the_host_meanwhile_is_not_clobbered(
        self, env: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch, name: str
    ) -> None:
        """If the host saves its file between our read and our rename, we start over."""
        path = home(env) / ".claude.json"
        path.write_text('{"numStartups": 1}')
        settings = home(env) / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text('{"model": "opus"}')
        saved = {
            ".claude.json": (path, '{"numStartups": 2}'),
            "settings.json": (settings, '{"model": "sonnet"}'),
        }
        victim, text = saved[name]
        real_current = writing.current
        calls = {"n": 0}

        def host_saves_once(where: str) -> bytes | None:
            if where == str(victim):
                calls["n"] += 1
                if calls["n"] == 3:  # after the read and the backup check: just before the rename
                    victim.write_text(text)
            return real_current(where)

        monkeypatch.setattr(writing, "current", host_saves_once)
        data = run_setup(env, repo, "claude", scope="user")
        assert calls["n"] > 3  # the file was read again after the host's save
        assert (data["changed"], data["hooks"]["changed"]) == (True, True)
        startups = 2 if name == ".claude.json" else 1
        assert json.loads(path.read_bytes()) == {
            "numStartups": startups,
            "mcpServers": {"cortex": CLAUDE_ENTRY},
        }
        model = "sonnet" if name == "settings.json" else "opus"
        assert json.loads(settings.read_bytes()) == {
            "model": model,
            **json.loads(hooks_file("claude")),
        }
        assert stray_temps(home(env)) == []
        assert stray_temps(settings.parent) == []


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
        settings = repo / ".claude" / "settings.json"
        assert settings.read_bytes() == hooks_file("claude")
        before = (snapshot(path), snapshot(settings))
        again = run_cortex(["setup", "claude"], env, repo)
        assert again.returncode == 0
        assert b"Already set up" in again.stdout
        assert (snapshot(path), snapshot(settings)) == before


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
        again = cli("setup", "claude").data
        assert (again["changed"], again["hooks"]["changed"]) == (False, False)
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
        # Codex's hooks file has no place for it: it holds the hooks only.
        hooks = json.loads((home(env) / ".codex" / "hooks.json").read_bytes())
        assert list(hooks) == ["hooks"]
        text = cli("setup", "codex", human=True).stdout
        assert "tool_timeout_sec = 460 s (a verify here may need 460 s" in text

    def test_a_longer_timeout_a_person_set_is_kept_a_shorter_one_raised(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        path = home(env) / ".codex" / "config.toml"
        path.parent.mkdir(parents=True)
        entry = 'command = "cortex"\nargs = ["serve"]\n'
        path.write_text(f"[mcp_servers.cortex]\n{entry}tool_timeout_sec = 3600\n")
        data = cli("setup", "codex").data
        assert data["changed"] is False
        assert data["entry"]["tool_timeout_sec"] == 3600
        assert registered(path)["tool_timeout_sec"] == 3600
        path.write_text(f"[mcp_servers.cortex]\n{entry}tool_timeout_sec = 30\n")
        assert cli("setup", "codex").data["changed"] is True
        assert registered(path)["tool_timeout_sec"] == 180

    def test_claude_reads_it_from_the_settings_env_setup_writes(self, cli: Cli, repo: Path) -> None:
        self.verifiers(repo, {"unit": 600})
        data = cli("setup", "claude").data
        assert "tool_timeout_sec" not in data["entry"]
        assert data["toolTimeout"] == {
            "setting": "env.MCP_TOOL_TIMEOUT",
            "seconds": 660,
            "written": True,
            "milliseconds": 660000,
        }
        settings = repo / ".claude" / "settings.json"
        assert json.loads(settings.read_bytes())["env"] == {"MCP_TOOL_TIMEOUT": "660000"}
        assert f"{settings}: env.MCP_TOOL_TIMEOUT = 660000 (ms)" in data["changes"]
        assert registered(repo / ".mcp.json") == CLAUDE_ENTRY
        text = cli("setup", "claude", human=True).stdout
        assert "env.MCP_TOOL_TIMEOUT = 660000 ms (a verify here may need 660 s" in text

    @pytest.mark.parametrize(
        ("had", "kept"),
        [
            ('"900000"', True),  # a person chose to wait longer
            ("900000", True),  # a JSON number, kept exactly as written
            ('"660000"', True),  # what setup would write
            ('"60000"', False),  # too short for the verifier: raised
            ('"soon"', False),  # not milliseconds: replaced
        ],
    )
    def test_a_longer_claude_timeout_is_kept_a_shorter_one_raised(
        self, cli: Cli, repo: Path, had: str, kept: bool
    ) -> None:
        self.verifiers(repo, {"unit": 600})
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        text = f'{{"env": {{"OTHER": "x", "MCP_TOOL_TIMEOUT": {had}}}, "model": "opus"}}'
        settings.write_text(text)
        data = cli("setup", "claude").data
        written = settings.read_text()
        value = had if kept else '"660000"'
        assert f'"MCP_TOOL_TIMEOUT": {value}' in written
        document = json.loads(written)
        assert list(document) == ["env", "model", "hooks"]
        assert list(document["env"]) == ["OTHER", "MCP_TOOL_TIMEOUT"]
        timeouts = [line for line in data["changes"] if "MCP_TOOL_TIMEOUT" in line]
        assert timeouts == ([] if kept else [f"{settings}: env.MCP_TOOL_TIMEOUT = 660000 (ms)"])
