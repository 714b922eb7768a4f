"""`cortex setup claude|codex`: the hook set, ours and theirs, `--remove`, the program forms, the
plugin (docs/design/hosts.md, section 7).

Real files under tmp_path, asserted on their bytes. tests/test_setup.py holds the server entry's
tests (and the helpers these share); tests/test_doctor.py holds what `doctor` says of hooks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli
from setup_kit import (
    ALL,
    ARGS,
    CLAUDE_ENTRY,
    HOOK_SET,
    TIMEOUT_MS,
    digest,
    home,
    hook_command,
    hook_groups,
    hooks_file,
    hooks_target,
    installed_commands,
    make_venv,
    registered,
    run_setup,
    snapshot,
    target,
)

import cortex
from cortex.kernel.host import hooks as hook_set

STALE = "0123456789ab"
"""A template digest no version of the hook set has: what an older Cortex would have written."""
THEIRS_BEFORE = {"type": "command", "command": "say before"}
THEIRS_AFTER = {"type": "command", "command": "say after", "timeout": 7}
LINT = {"type": "command", "command": "lint-on-save", "timeout": 30}
FORMAT = {"type": "command", "command": "fmt --quiet"}
AUDIT = {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash", "timeout": 3}]}
POST_TOOL_USE_MATCHER = {event: matcher for event, matcher, _ in HOOK_SET["claude"]}["PostToolUse"]


@pytest.fixture
def env(env: dict[str, str]) -> dict[str, str]:
    """This installation's `cortex` first on PATH: setup's default form is `path`."""
    return {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]}


def dumps(document: object) -> bytes:
    """A JSON document as setup writes it (two-space indent, UTF-8, a final newline)."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def written_by_setup(repo: Path) -> list[Path]:
    """The project-scope files setup may write, those that exist."""
    names = [".mcp.json", ".claude/settings.json", ".codex/config.toml", ".codex/hooks.json"]
    return [repo / name for name in names if (repo / name).exists()]


def codex_schema_violations(document: object) -> list[str]:
    """What breaks the published Codex hooks schema's rules, checked one by one.

    The root is an object whose only key, required, is `hooks`; each event is an array of at
    least one matcher group; each group is an object whose `hooks` is an array of at least one
    handler; a command handler has type "command", a non-empty string `command` and an integer
    `timeout` of at least 0.
    """
    if not isinstance(document, dict):
        return ["the root is not an object"]
    found = [f"the root has another key: {key}" for key in document if key != "hooks"]
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return [*found, "hooks is missing or not an object"]
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not groups:
            found.append(f"{event}: not an array of at least one group")
            continue
        for i, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not handlers:
                found.append(f"{event}[{i}]: not a group with at least one handler")
                continue
            for j, handler in enumerate(handlers):
                where = f"{event}[{i}].hooks[{j}]"
                if not isinstance(handler, dict) or handler.get("type") != "command":
                    found.append(f"{where}: not a command handler")
                    continue
                command = handler.get("command")
                if not isinstance(command, str) or not command:
                    found.append(f"{where}: command is not a non-empty string")
                timeout = handler.get("timeout")
                if type(timeout) is not int or timeout < 0:
                    found.append(f"{where}: timeout is not an integer >= 0")
    return found


class TestHooks:
    def test_their_hooks_groups_events_and_keys_are_kept_in_order(
        self, cli: Cli, repo: Path
    ) -> None:
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        original: dict[str, Any] = {
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {
                "PreToolUse": [AUDIT],
                "Stop": [{"hooks": [THEIRS_BEFORE]}, {"matcher": "", "hooks": [THEIRS_AFTER]}],
            },
            "env": {"DEBUG": "1"},
            "model": "opus",
        }
        text = json.dumps(original, indent=4)  # another tool's formatting: read, not kept
        settings.write_text(text)
        data = cli("setup", "claude").data
        theirs = original["hooks"]
        hooks: dict[str, Any] = {event: list(groups) for event, groups in theirs.items()}
        for event, groups in hook_groups("claude").items():
            # An event with hooks already gets ours last; a new event comes after the others.
            hooks[event] = [*hooks.get(event, []), *groups]
        expected = {
            "permissions": original["permissions"],
            "hooks": hooks,
            "env": {"DEBUG": "1", "MCP_TOOL_TIMEOUT": TIMEOUT_MS},
            "model": "opus",
        }
        assert settings.read_bytes() == dumps(expected)
        template = [event for event, _, _ in HOOK_SET["claude"]]
        assert list(json.loads(settings.read_bytes())["hooks"]) == [
            "PreToolUse",
            "Stop",
            *(event for event in template if event not in {"PreToolUse", "Stop"}),
        ]
        backup = settings.with_name("settings.json.cortex-backup")
        assert data["hooks"] == {
            "path": str(settings),
            "changed": True,
            "created": False,
            "backup": str(backup),
            "template": digest("claude"),
        }
        assert backup.read_text() == text
        # A second run changes no byte of either file, and writes no other file.
        mcp = repo / ".mcp.json"
        before = (snapshot(mcp), snapshot(settings), sorted(os.listdir(settings.parent)))
        again = cli("setup", "claude").data
        assert (again["changed"], again["hooks"]["changed"], again["changes"]) == (
            False,
            False,
            [],
        )
        assert (snapshot(mcp), snapshot(settings), sorted(os.listdir(settings.parent))) == before

    def test_a_rerun_puts_ours_back_where_they_stood(self, cli: Cli, repo: Path) -> None:
        """Moved by a person, between another tool's hooks, then stale: replaced in place."""
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        hooks = document["hooks"]
        stop = [{"hooks": [THEIRS_BEFORE]}, *hooks.pop("Stop"), {"hooks": [THEIRS_AFTER]}]
        post = hooks["PostToolUse"]
        hooks["PostToolUse"] = [
            {"matcher": "Bash", "hooks": [LINT]},
            *post,
            {"matcher": "Edit", "hooks": [FORMAT]},
        ]
        # The person also put Stop first and the env before the hooks.
        edited = dumps({"env": document["env"], "hooks": {"Stop": stop, **hooks}})
        settings.write_bytes(edited)
        current = cli("setup", "claude").data
        assert current["hooks"]["changed"] is False
        assert settings.read_bytes() == edited
        settings.write_bytes(edited.replace(digest("claude").encode(), STALE.encode()))
        repaired = cli("setup", "claude").data
        assert repaired["hooks"]["changed"] is True
        # The events as the file holds them now.
        events = ", ".join(["Stop", *(e for e, _, _ in HOOK_SET["claude"] if e != "Stop")])
        shown = f"cortex hook EVENT --template {digest('claude')}"
        assert repaired["changes"] == [f"{settings}: hooks {events} run `{shown}`"]
        assert settings.read_bytes() == edited

    def test_their_hook_added_to_our_group_keeps_its_matcher_when_ours_is_replaced(
        self, cli: Cli, repo: Path
    ) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        [group] = document["hooks"]["PostToolUse"]
        group["hooks"].append(FORMAT)
        settings.write_bytes(dumps(document).replace(digest("claude").encode(), STALE.encode()))
        cli("setup", "claude")
        [ours] = hook_groups("claude")["PostToolUse"]
        matcher = POST_TOOL_USE_MATCHER
        # Ours is replaced where it stands: their hook stays in the group they put it in.
        assert json.loads(settings.read_bytes())["hooks"]["PostToolUse"] == [
            {"matcher": matcher, "hooks": [*ours["hooks"], FORMAT]},
        ]
        again = settings.read_bytes()
        assert cli("setup", "claude").data["hooks"]["changed"] is False
        assert settings.read_bytes() == again

    def test_a_current_hook_sharing_a_group_with_theirs_is_left_as_it_is(
        self, cli: Cli, repo: Path
    ) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        document["hooks"]["Stop"][0]["hooks"].append(FORMAT)  # as a hooks menu might add it
        settings.write_bytes(dumps(document))
        before = snapshot(settings)
        assert cli("setup", "claude").data["hooks"]["changed"] is False
        assert snapshot(settings) == before

    def test_a_cortex_hook_in_an_event_the_template_dropped_is_taken_out(
        self, cli: Cli, repo: Path
    ) -> None:
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        old = {"type": "command", "command": f"cortex hook Notification --template {STALE}"}
        theirs = {"hooks": [{"type": "command", "command": "notify-send done"}]}
        settings.write_text(json.dumps({"hooks": {"Notification": [{"hooks": [old]}, theirs]}}))
        cli("setup", "claude")
        written = json.loads(settings.read_bytes())["hooks"]
        assert written["Notification"] == [theirs]
        assert checks_of(cli)["host hooks"]["status"] == "ok"

    def test_a_hook_that_only_mentions_cortex_hook_is_theirs(self, cli: Cli, repo: Path) -> None:
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        mention = {"type": "command", "command": "echo 'cortex hook ran' >> ~/hooks.txt"}
        settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [mention]}]}}))
        cli("setup", "claude")
        stop = json.loads(settings.read_bytes())["hooks"]["Stop"]
        assert stop == [{"hooks": [mention]}, *hook_groups("claude")["Stop"]]

    def test_the_template_digest_names_the_hook_set(
        self, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """12 hex, one per host, and a new one whenever the set changes: what doctor compares."""
        first = digest("claude")
        assert re.fullmatch(r"[0-9a-f]{12}", first)
        assert re.fullmatch(r"[0-9a-f]{12}", digest("codex"))
        assert digest("codex") != first
        data = cli("setup", "claude").data
        settings = repo / ".claude" / "settings.json"
        assert data["hooks"]["template"] == first
        for commands in installed_commands(settings).values():
            assert [c.rsplit(" ", 2)[1:] for c in commands] == [["--template", first]]
        longer = tuple(
            (event, matcher, 20 if event == "Stop" else timeout)
            for event, matcher, timeout in hook_set.TEMPLATE["claude"]
        )
        monkeypatch.setitem(hook_set.TEMPLATE, "claude", longer)
        second = hook_set.digest("claude")
        assert re.fullmatch(r"[0-9a-f]{12}", second)
        assert second != first
        data = cli("setup", "claude").data
        assert (data["hooks"]["changed"], data["hooks"]["template"]) == (True, second)
        written = json.loads(settings.read_bytes())["hooks"]
        assert written["Stop"][0]["hooks"][0] == {
            "type": "command",
            "command": f"cortex hook Stop --template {second}",
            "timeout": 20,
        }
        assert all(second in c for cs in installed_commands(settings).values() for c in cs)

    def test_a_dry_run_of_a_stale_hook_set_writes_nothing_and_lists_the_change(
        self, cli: Cli, repo: Path
    ) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        settings.write_bytes(settings.read_bytes().replace(digest("claude").encode(), b"0" * 12))
        before = (snapshot(repo / ".mcp.json"), snapshot(settings))
        listing = sorted(os.listdir(settings.parent))
        out = cli("setup", "claude", "--dry-run")
        data = out.data
        assert (data["dryRun"], data["changed"], data["hooks"]["changed"]) == (True, False, True)
        events = ", ".join(event for event, _, _ in HOOK_SET["claude"])
        shown = f"cortex hook EVENT --template {digest('claude')}"
        assert data["changes"] == [f"{settings}: hooks {events} run `{shown}`"]
        assert out.envelope["actions"][0]["command"] == "cortex setup claude --scope project"
        assert (snapshot(repo / ".mcp.json"), snapshot(settings)) == before
        assert sorted(os.listdir(settings.parent)) == listing
        human = "".join(cli("setup", "claude", "--dry-run", human=True).stdout.split())
        assert "Wouldsetup" in human
        assert "dryrun:nothingwaswritten" in human
        assert (snapshot(repo / ".mcp.json"), snapshot(settings)) == before


def checks_of(cli: Cli) -> dict[str, dict[str, Any]]:
    """`doctor`'s checks by name (whatever its exit status)."""
    out = cli("doctor")
    return {check["name"]: check for check in out.envelope["data"]["checks"]}


class TestRemove:
    def test_remove_takes_out_exactly_what_setup_put_in(self, cli: Cli, repo: Path) -> None:
        """A person's hook, env var, server and keys stay, byte for byte as they were."""
        mcp = repo / ".mcp.json"
        other = {"type": "stdio", "command": "node", "args": ["docs.js"]}
        mcp_before = dumps({"mcpServers": {"docs": other}, "z": 1})
        mcp.write_bytes(mcp_before)
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings_before = dumps(
            {"hooks": {"Stop": [{"hooks": [THEIRS_BEFORE]}]}, "env": {"DEBUG": "1"}}
        )
        settings.write_bytes(settings_before)
        assert cli("setup", "claude").data["hooks"]["changed"] is True
        backups = {p: p.with_name(p.name + ".cortex-backup") for p in (mcp, settings)}
        kept = {p: snapshot(b) for p, b in backups.items()}
        out = cli("setup", "claude", "--remove")
        data = out.data
        assert mcp.read_bytes() == mcp_before
        assert settings.read_bytes() == settings_before
        assert {p: snapshot(b) for p, b in backups.items()} == kept  # no second backup
        assert {k: data[k] for k in ("changed", "created", "backup", "entry", "kept")} == {
            "changed": True,
            "created": False,
            "backup": None,
            "entry": None,
            "kept": [],
        }
        assert (data["removed"], data["program"]) == (True, None)
        assert data["hooks"] == {
            "path": str(settings),
            "changed": True,
            "created": False,
            "backup": None,
            "template": digest("claude"),
        }
        assert data["changes"] == [
            f"{mcp}: the cortex server entry removed",
            f"{settings}: {len(HOOK_SET['claude'])} cortex hook(s) removed",
            f"{settings}: env.MCP_TOOL_TIMEOUT removed",
        ]
        # A second removal finds nothing of Cortex's: nothing changes.
        before = (snapshot(mcp), snapshot(settings))
        again = cli("setup", "claude", "--remove").data
        assert (again["changed"], again["hooks"]["changed"], again["changes"]) == (
            False,
            False,
            [],
        )
        assert (snapshot(mcp), snapshot(settings)) == before
        text = cli("setup", "claude", "--remove", human=True).stdout
        assert "Not registered with Claude Code (project scope); nothing changed" in text

    @pytest.mark.parametrize(("host", "scope"), ALL)
    def test_a_file_that_held_only_ours_is_deleted_with_its_directory(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str, scope: str
    ) -> None:
        repo_listing, home_listing = sorted(os.listdir(repo)), sorted(os.listdir(home(env)))
        cli("setup", host, "--scope", scope)
        path, hooks = target(env, repo, host, scope), hooks_target(env, repo, host, scope)
        assert path.exists()
        assert hooks.exists()
        data = cli("setup", host, "--scope", scope, "--remove").data
        assert (data["changed"], data["hooks"]["changed"]) == (True, True)
        assert (data["backup"], data["hooks"]["backup"]) == (None, None)
        # A project file that held only ours is gone: the answer says to commit its removal.
        expected = [str(p) for p in (path, hooks)] if scope == "project" else []
        assert [f["path"] for f in data["files"]] == expected
        assert all(f["deleted"] and "git rm" in f["advice"] for f in data["files"])
        assert not path.exists()
        assert not hooks.exists()
        # No backup, no temp, and the `.claude` or `.codex` directory setup made is gone too.
        assert sorted(os.listdir(repo)) == repo_listing
        assert sorted(os.listdir(home(env))) == home_listing

    def test_a_timeout_the_user_raised_stays(self, cli: Cli, repo: Path) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        document["env"]["MCP_TOOL_TIMEOUT"] = "900000"
        settings.write_bytes(dumps(document))
        data = cli("setup", "claude", "--remove").data
        assert data["changes"] == [
            f"{repo / '.mcp.json'}: the cortex server entry removed",
            f"{settings}: {len(HOOK_SET['claude'])} cortex hook(s) removed",
        ]
        assert settings.read_bytes() == dumps({"env": {"MCP_TOOL_TIMEOUT": "900000"}})

    def test_their_hook_in_our_group_stays_with_its_matcher(self, cli: Cli, repo: Path) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        document["hooks"]["PostToolUse"][0]["hooks"].append(FORMAT)
        empty = {"matcher": "x", "hooks": []}  # a group that was empty before setup stays
        document["hooks"]["SessionStart"].insert(0, empty)
        settings.write_bytes(dumps(document))
        cli("setup", "claude", "--remove")
        matcher = POST_TOOL_USE_MATCHER
        assert settings.read_bytes() == dumps(
            {
                "hooks": {
                    "SessionStart": [empty],
                    "PostToolUse": [{"matcher": matcher, "hooks": [FORMAT]}],
                }
            }
        )

    def test_a_dry_run_of_remove_writes_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        cli("setup", "codex")
        path, hooks = target(env, repo, "codex", "user"), hooks_target(env, repo, "codex", "user")
        before = (snapshot(path), snapshot(hooks), sorted(os.listdir(path.parent)))
        out = cli("setup", "codex", "--remove", "--dry-run")
        assert out.data["changes"] == [
            f"{path}: the cortex server entry removed",
            f"{hooks}: {len(HOOK_SET['codex'])} cortex hook(s) removed",
        ]
        assert out.envelope["actions"][0]["command"] == "cortex setup codex --scope user --remove"
        assert (snapshot(path), snapshot(hooks), sorted(os.listdir(path.parent))) == before

    def test_remove_where_nothing_was_set_up_creates_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        for host in ("claude", "codex"):
            data = cli("setup", host, "--remove").data
            assert (data["changed"], data["hooks"]["changed"], data["files"]) == (False, False, [])
        assert sorted(os.listdir(repo)) == [".git", "app.py"]
        assert sorted(os.listdir(home(env))) == []


UNEDITABLE = [
    b"{not json",
    b"[]",
    b'{"hooks": []}',
    b'{"hooks": "SessionStart"}',
    b'{"hooks": null}',
    b'{"hooks": {"Stop": {}}}',
    b'{"hooks": {"Stop": [1]}}',
    b'{"hooks": {"Stop": [{"hooks": {}}]}}',
    b'{"env": []}',
    b'{"hooks": {}, "hooks": {}}',
]
"""Settings files whose hooks (or env) setup cannot edit without guessing."""


class TestRefusals:
    @pytest.mark.parametrize(
        ("content", "remove"),
        [
            *(
                (content, remove)
                for content in UNEDITABLE
                for remove in (False, True)
                if (content, remove) != (b'{"hooks": null}', True)
            ),
            pytest.param(
                b'{"hooks": null}',
                True,
            ),
        ],
    )
    def test_a_hooks_file_that_cannot_be_edited_is_refused_and_neither_file_written(
        self, cli: Cli, repo: Path, content: bytes, remove: bool
    ) -> None:
        mcp = repo / ".mcp.json"
        if remove:
            mcp.write_bytes(dumps({"mcpServers": {"cortex": CLAUDE_ENTRY}}))
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_bytes(content)
        before = snapshot(settings)
        repo_listing = sorted(os.listdir(repo))
        mcp_before = snapshot(mcp) if remove else None
        out = cli("setup", "claude", *(["--remove"] if remove else []))
        assert out.code == 4
        assert out.error_code == "invalid_input"
        assert str(settings) in out.envelope["error"]["message"]
        assert snapshot(settings) == before
        assert os.listdir(settings.parent) == ["settings.json"]
        assert sorted(os.listdir(repo)) == repo_listing
        assert (snapshot(mcp) if remove else None) == mcp_before
        assert cli("setup", "claude", "--dry-run").code == 4

    def test_a_codex_hooks_file_that_does_not_parse_is_refused(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        hooks = home(env) / ".codex" / "hooks.json"
        hooks.parent.mkdir()
        hooks.write_bytes(b'{"hooks": [')
        out = cli("setup", "codex")
        assert out.code == 4
        assert str(hooks) in out.envelope["error"]["message"]
        assert os.listdir(hooks.parent) == ["hooks.json"]
        assert hooks.read_bytes() == b'{"hooks": ['

    @pytest.mark.parametrize("scope", ["project", "user"])
    def test_a_symlinked_claude_directory_or_settings_file_is_refused(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path, scope: str
    ) -> None:
        """A planted link would send the write elsewhere: refused (5), neither file written."""
        base = repo if scope == "project" else home(env)
        planted = tmp_path / "planted"
        planted.mkdir()
        (base / ".claude").symlink_to(planted, target_is_directory=True)
        out = cli("setup", "claude", "--scope", scope)
        assert out.code == 5
        assert ".claude is a symlink" in out.envelope["error"]["message"]
        assert list(planted.iterdir()) == []
        assert not target(env, repo, "claude", scope).exists()
        (base / ".claude").unlink()
        (base / ".claude").mkdir()
        real = tmp_path / "real-settings.json"
        real.write_text("{}")
        (base / ".claude" / "settings.json").symlink_to(real)
        out = cli("setup", "claude", "--scope", scope)
        assert out.code == 5
        assert real.read_text() == "{}"
        assert not target(env, repo, "claude", scope).exists()


class TestModes:
    @pytest.mark.parametrize(("host", "scope"), ALL)
    def test_a_new_hooks_file_is_private_in_a_home_and_shared_in_a_repository(
        self, cli: Cli, env: dict[str, str], repo: Path, host: str, scope: str
    ) -> None:
        cli("setup", host, "--scope", scope)
        hooks = hooks_target(env, repo, host, scope)
        assert stat.S_IMODE(hooks.stat().st_mode) == (0o600 if scope == "user" else 0o644)
        if scope == "user":
            assert stat.S_IMODE(hooks.parent.stat().st_mode) & 0o077 == 0

    def test_an_existing_settings_file_keeps_its_mode(self, cli: Cli, repo: Path) -> None:
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text('{"model": "opus"}')
        settings.chmod(0o640)
        cli("setup", "claude")
        assert stat.S_IMODE(settings.stat().st_mode) == 0o640
        backup = settings.with_name("settings.json.cortex-backup")
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert backup.read_text() == '{"model": "opus"}'


class TestProgramForms:
    def test_path_the_cortex_on_path_when_it_is_this_installation(
        self, cli: Cli, repo: Path
    ) -> None:
        data = cli("setup", "claude").data
        assert data["program"] == {"form": "path", "path": "cortex"}
        assert registered(repo / ".mcp.json") == CLAUDE_ENTRY
        assert (repo / ".claude" / "settings.json").read_bytes() == hooks_file("claude")

    def test_another_cortex_first_on_path_is_not_this_installation(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """Naming `cortex` would start that one: project scope is refused, user scope absolute."""
        other = tmp_path / "other-bin"
        other.mkdir()
        (other / "cortex").write_text("#!/bin/sh\nexit 0\n")
        (other / "cortex").chmod(0o755)
        env["PATH"] = str(other) + os.pathsep + env["PATH"]
        out = cli("setup", "claude")
        assert out.code == 5
        assert out.error_code == "refused"
        assert sorted(os.listdir(repo)) == [".git", "app.py"]
        script = os.path.join(os.path.dirname(sys.executable), "cortex")
        data = cli("setup", "claude", "--scope", "user").data
        assert data["program"] == {"form": "absolute", "path": script}
        assert registered(home(env) / ".claude.json")["command"] == script
        commands = installed_commands(home(env) / ".claude" / "settings.json")
        assert commands["Stop"] == [hook_command("claude", "Stop", shlex.quote(script))]

    @pytest.mark.parametrize("host", ["claude", "codex"])
    def test_venv_the_repositorys_own_virtualenv_relative_to_it(
        self, env: dict[str, str], repo: Path, host: str
    ) -> None:
        python = make_venv(repo)
        data = run_setup(env, repo, host, scope="project", interpreter=str(python))
        assert data["program"] == {"form": "venv", "path": ".venv/bin/cortex"}
        assert registered(target(env, repo, host, "project"))["command"] == ".venv/bin/cortex"
        assert registered(target(env, repo, host, "project"))["args"] == ARGS
        # Claude Code runs a hook in the session's directory, which follows `cd`.
        program = (
            '"$CLAUDE_PROJECT_DIR"/.venv/bin/cortex' if host == "claude" else ".venv/bin/cortex"
        )
        assert hooks_target(env, repo, host, "project").read_bytes() == hooks_file(host, program)
        again = run_setup(env, repo, host, scope="project", interpreter=str(python))
        assert (again["changed"], again["hooks"]["changed"]) == (False, False)

    def test_absolute_in_user_scope_the_console_script_beside_the_interpreter(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """Neither in the repository nor on PATH: a user's own file may name it."""
        install = tmp_path / "opt" / "cortex env"
        make_venv(install)
        python = install / ".venv" / "bin" / "python"
        script = str(install / ".venv" / "bin" / "cortex")
        data = run_setup(env, repo, "codex", scope="user", interpreter=str(python))
        assert data["program"] == {"form": "absolute", "path": script}
        assert registered(home(env) / ".codex" / "config.toml") == {
            "command": script,
            "args": ARGS,
            "tool_timeout_sec": 180,
        }
        hooks = home(env) / ".codex" / "hooks.json"
        assert hooks.read_bytes() == hooks_file("codex", shlex.quote(script))
        assert shlex.split(installed_commands(hooks)["Stop"][0])[0] == script
        with pytest.raises(Exception) as caught:
            run_setup(env, repo, "codex", scope="project", interpreter=str(python))
        assert getattr(caught.value, "code", None) == "refused"
        assert not (repo / ".codex").exists()

    def test_a_user_scope_file_never_holds_a_path_relative_to_one_repository(
        self, env: dict[str, str], repo: Path
    ) -> None:
        python = make_venv(repo)
        script = str(repo / ".venv" / "bin" / "cortex")
        data = run_setup(env, repo, "claude", scope="user", interpreter=str(python))
        assert data["program"] == {"form": "absolute", "path": script}
        assert registered(home(env) / ".claude.json")["command"] == script
        commands = installed_commands(home(env) / ".claude" / "settings.json")
        assert commands["Stop"] == [hook_command("claude", "Stop", shlex.quote(script))]

    @pytest.mark.parametrize("form", ["path", "venv"])
    def test_no_project_file_holds_a_path_of_this_machine(
        self, env: dict[str, str], repo: Path, tmp_path: Path, form: str
    ) -> None:
        interpreter = str(make_venv(repo)) if form == "venv" else None
        for host in ("claude", "codex"):
            data = run_setup(env, repo, host, scope="project", interpreter=interpreter)
            assert data["program"]["form"] == form
        files = written_by_setup(repo)
        assert len(files) == 4
        machine = {
            str(tmp_path),
            os.path.realpath(tmp_path),
            sys.executable,
            os.path.realpath(sys.executable),
            os.path.dirname(sys.executable),
            str(repo),
        }
        for path in files:
            text = path.read_text("utf-8")
            assert [m for m in machine if m in text] == [], path


class TestCodexSchema:
    def test_the_checker_catches_each_rule(self) -> None:
        """The checker below must be able to fail: one broken rule at a time."""
        good = {"type": "command", "command": "x", "timeout": 5}
        assert codex_schema_violations({"hooks": {"Stop": [{"hooks": [good]}]}}) == []
        broken: list[object] = [
            [],
            {},
            {"hooks": {}, "other": 1},
            {"hooks": {"Stop": []}},
            {"hooks": {"Stop": {}}},
            {"hooks": {"Stop": [{"hooks": []}]}},
            {"hooks": {"Stop": [{"matcher": "x"}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "type": "prompt"}]}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "command": ""}]}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "command": ["x"]}]}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "timeout": -1}]}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "timeout": 1.5}]}]}},
            {"hooks": {"Stop": [{"hooks": [{**good, "timeout": True}]}]}},
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}},
        ]
        for document in broken:
            assert codex_schema_violations(document) != [], document

    @pytest.mark.parametrize("scope", ["user", "project"])
    def test_what_setup_writes_for_codex_keeps_the_schemas_rules(
        self, cli: Cli, env: dict[str, str], repo: Path, scope: str
    ) -> None:
        cli("setup", "codex", "--scope", scope)
        hooks = hooks_target(env, repo, "codex", scope)
        assert codex_schema_violations(json.loads(hooks.read_bytes())) == []
        assert list(installed_commands(hooks)) == [e for e, _, _ in HOOK_SET["codex"]]

    def test_merged_with_theirs_and_after_remove_it_still_keeps_them(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        hooks = home(env) / ".codex" / "hooks.json"
        hooks.parent.mkdir()
        theirs = {"hooks": {"Stop": [{"hooks": [{**THEIRS_AFTER}]}], "PreToolUse": [AUDIT]}}
        assert codex_schema_violations(theirs) == []
        hooks.write_bytes(dumps(theirs))
        cli("setup", "codex")
        assert codex_schema_violations(json.loads(hooks.read_bytes())) == []
        cli("setup", "codex", "--remove")
        assert codex_schema_violations(json.loads(hooks.read_bytes())) == []
        assert hooks.read_bytes() == dumps(theirs)


class TestPlugin:
    def files(self, directory: Path) -> dict[str, Any]:
        found = sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())
        return {name: json.loads((directory / name).read_bytes()) for name in found}

    def test_the_plugin_holds_its_manifest_hooks_and_server(self, cli: Cli, repo: Path) -> None:
        plugin = repo / "plugin"
        data = cli("setup", "claude", "--plugin", "plugin").data
        names = [".claude-plugin/plugin.json", "hooks/hooks.json", ".mcp.json"]
        assert data == {
            "plugin": str(plugin),
            "dryRun": False,
            "changed": True,
            "files": [str(plugin / name) for name in names],
            "template": digest("claude"),
            "program": {"form": "path", "path": "cortex"},
        }
        files = self.files(plugin)
        assert sorted(files) == sorted(names)
        manifest = files[".claude-plugin/plugin.json"]
        assert list(manifest) == ["name", "version", "description", "author"]
        assert (manifest["name"], manifest["version"]) == ("cortex", cortex.__version__)
        assert isinstance(manifest["description"], str)
        assert manifest["description"].strip()
        assert manifest["author"] == {"name": "Cortex maintainers"}
        # The hook set runs from PATH: the plugin goes to machines setup never sees.
        commands = [
            hook["command"]
            for groups in files["hooks/hooks.json"]["hooks"].values()
            for group in (groups if isinstance(groups, list) else [groups])
            for hook in group["hooks"]
        ]
        assert commands == [hook_command("claude", e) for e, _, _ in HOOK_SET["claude"]]
        assert files[".mcp.json"] == {
            "mcpServers": {"cortex": {"type": "stdio", "command": "cortex", "args": ARGS}}
        }
        for name in names:
            assert str(repo.parent) not in (plugin / name).read_text()
            assert sys.executable not in (plugin / name).read_text()
        # Setup's own files are not touched by a plugin.
        assert not (repo / ".mcp.json").exists()
        assert not (repo / ".claude").exists()

    def test_the_plugins_hooks_are_the_hook_set_in_the_hosts_shape(
        self, cli: Cli, repo: Path
    ) -> None:
        cli("setup", "claude", "--plugin", "plugin")
        written = json.loads((repo / "plugin" / "hooks" / "hooks.json").read_bytes())
        assert written == {"hooks": hook_groups("claude")}

    def test_a_second_run_changes_nothing(self, cli: Cli, repo: Path) -> None:
        cli("setup", "claude", "--plugin", "plugin")
        paths = sorted(p for p in (repo / "plugin").rglob("*") if p.is_file())
        before = [snapshot(p) for p in paths]
        data = cli("setup", "claude", "--plugin", "plugin").data
        assert (data["changed"], data["files"]) == (False, [])
        assert [snapshot(p) for p in paths] == before
        assert (
            "Plugin up to date" in cli("setup", "claude", "--plugin", "plugin", human=True).stdout
        )

    def test_a_dry_run_writes_nothing(self, cli: Cli, repo: Path) -> None:
        data = cli("setup", "claude", "--plugin", "plugin", "--dry-run").data
        assert (data["dryRun"], data["changed"], len(data["files"])) == (True, True, 3)
        assert not (repo / "plugin").exists()

    def test_a_directory_with_other_files_is_refused(self, cli: Cli, repo: Path) -> None:
        theirs = repo / "tools"
        theirs.mkdir()
        (theirs / "notes.txt").write_text("mine")
        out = cli("setup", "claude", "--plugin", "tools")
        assert out.code == 4
        assert out.error_code == "invalid_input"
        assert str(theirs) in out.envelope["error"]["message"]
        assert os.listdir(theirs) == ["notes.txt"]
        assert (theirs / "notes.txt").read_text() == "mine"

    @pytest.mark.parametrize("extra", [["--scope", "project"], ["--scope", "user"], ["--remove"]])
    def test_plugin_with_scope_or_remove_is_refused(
        self, cli: Cli, env: dict[str, str], repo: Path, extra: list[str]
    ) -> None:
        out = cli("setup", "claude", "--plugin", "plugin", *extra)
        assert out.code == 4
        assert out.error_code == "invalid_input"
        assert "--plugin" in out.envelope["error"]["message"]
        assert sorted(os.listdir(repo)) == [".git", "app.py"]
        assert sorted(os.listdir(home(env))) == []


class TestTheirOwnWrappers:
    """An attack found setup taking a person's own wrapper hook for Cortex's (issue 25)."""

    @pytest.mark.parametrize(
        "command",
        ["cortex hook Stop && notify-send done", "python3 -m cortex hook Stop >> hooks.txt",
         "cortex hook Stop --template abc --extra"],
    )  # fmt: skip
    def test_a_command_that_does_more_than_run_cortex_hook_is_theirs(
        self, cli: Cli, repo: Path, command: str
    ) -> None:
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        theirs = {"type": "command", "command": command}
        settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}))
        cli("setup", "claude")
        stop = json.loads(settings.read_bytes())["hooks"]["Stop"]
        assert {"hooks": [theirs]} in stop
        cli("setup", "claude", "--remove")
        assert json.loads(settings.read_bytes())["hooks"]["Stop"] == [{"hooks": [theirs]}]

    def test_their_own_keys_on_our_entry_stay(self, cli: Cli, repo: Path) -> None:
        cli("setup", "claude")
        settings = repo / ".claude" / "settings.json"
        document = json.loads(settings.read_bytes())
        entry = document["hooks"]["Stop"][0]["hooks"][0]
        entry.update(statusMessage="checking proof", timeout=60)
        entry["command"] = entry["command"].replace(digest("claude"), STALE)
        settings.write_bytes(dumps(document))
        cli("setup", "claude")
        [group] = json.loads(settings.read_bytes())["hooks"]["Stop"]
        [repaired] = group["hooks"]
        assert repaired["statusMessage"] == "checking proof"
        assert repaired["timeout"] == 60  # longer than ours: kept
        assert digest("claude") in repaired["command"]
