"""Shell completion from the command table, and help that a person can start from.

`cortex completion SHELL` prints a script that asks `cortex completion SHELL --line ...` on each
<Tab>; the answers come from the grammar, and task ids from this workspace's store with their
goals. Bare `cortex` and `cortex help` print the help (exit 0), grouped by a case's life.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli

from cortex.cli.grammar import COMMANDS, GROUPS
from cortex.cli.parser import command_help


def candidates(cli: Cli, line: str, shell: str = "fish") -> list[str]:
    """What the fish script would read: `value<TAB>description` lines."""
    out = cli("completion", shell, "--line", line, human=True)
    assert out.code == 0, out.stderr
    return out.stdout.splitlines()


def values(cli: Cli, line: str) -> list[str]:
    return [entry.split("\t", 1)[0] for entry in candidates(cli, line)]


class TestScripts:
    @pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
    def test_each_script_calls_back_for_candidates(self, cli: Cli, shell: str) -> None:
        out = cli("completion", shell, human=True)
        assert out.code == 0
        assert f"cortex completion {shell} --line" in out.stdout
        assert out.stdout.endswith("\n")
        assert cli("completion", shell).data["script"] == out.stdout

    def test_an_unknown_shell_is_exit_4(self, cli: Cli) -> None:
        out = cli("completion", "tcsh")
        assert (out.code, out.error_code) == (4, "invalid_input")
        assert "bash, zsh or fish" in out.envelope["error"]["message"]

    @pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
    def test_bash_completes_a_task_id_from_the_script(
        self, cli: Cli, env: dict[str, str], tmp_path: Path
    ) -> None:
        """The real script in a real bash, calling a `cortex` found on PATH."""
        task = cli.open("Completed by bash")
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "cortex"
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m cortex "$@"\n')
        shim.chmod(0o755)
        script = cli("completion", "bash", human=True).stdout
        program = (
            script
            + 'COMP_LINE="cortex case status task_"; COMP_POINT=${#COMP_LINE}; _cortex\n'
            + 'printf "%s\\n" "${COMPREPLY[@]}"\n'
        )
        proc = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", program],
            cwd=cli.cwd,
            env={**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [task]


class TestCandidates:
    def test_command_words_then_subcommands(self, cli: Cli) -> None:
        assert {"case", "init", "doctor", "help", "completion"} <= set(values(cli, "cortex "))
        assert values(cli, "cortex ca") == ["case"]
        assert values(cli, "cortex case st") == ["status"]
        assert values(cli, "cortex case lease ") == ["release", "renew"]
        assert values(cli, "cortex case decision an") == ["answer"]

    def test_task_ids_with_their_goals_newest_first_and_latest(self, cli: Cli) -> None:
        older = cli.open("The older case")
        newer = cli.open("The newer case")
        found = candidates(cli, "cortex case status ")
        assert found[0] == "@latest\tthe newest case opened here"
        assert found[1:] == [
            f"{newer}\torienting: The newer case",
            f"{older}\torienting: The older case",
        ]
        assert values(cli, f"cortex case note {older[:-3]}") == [older]
        assert values(cli, "cortex case open goal --parent @") == ["@latest"]
        # Only the positional that is a task id completes ids.
        assert values(cli, f"cortex case note {older} ") == []

    def test_options_their_values_and_what_was_given(self, cli: Cli) -> None:
        found = values(cli, "cortex case open goal --")
        assert {"--mode", "--risk", "--criterion", "--json", "--workspace", "--help"} <= set(found)
        assert values(cli, "cortex case open goal --mode ") == ["change", "investigate", "review"]
        assert values(cli, "cortex case resolve t h --status c") == ["confirmed", "challenged"]
        # A single-valued option given once is not offered again; a repeatable one is.
        assert "--mode" not in values(cli, "cortex case open g --mode change --")
        assert "--criterion" in values(cli, "cortex case open g --criterion a=b --")
        # The value of an option is not a command word or a positional.
        assert values(cli, "cortex -C /tmp ca") == ["case"]
        assert values(cli, "cortex completion ") == ["bash", "zsh", "fish"]

    def test_each_shell_reads_its_own_format(self, cli: Cli) -> None:
        bash = candidates(cli, "cortex case st", "bash")
        zsh = candidates(cli, "cortex case st", "zsh")
        assert bash == ["status"]
        assert zsh == ["status:where a case stands and what can be done next"]

    def test_an_unfinished_quote_still_completes(self, cli: Cli) -> None:
        assert "--mode" in values(cli, 'cortex case open "a goal --mo')


class TestHelp:
    def test_bare_cortex_and_cortex_help_print_the_help(self, cli: Cli) -> None:
        for argv in ((), ("help",), ("-C", str(cli.cwd))):
            out = cli(*argv, human=True)
            assert out.code == 0, argv
            assert out.stdout.startswith("usage: cortex <command> ...")
        text = cli("help", human=True).stdout
        titles = [line[:-1] for line in text.splitlines() if line.endswith(":")]
        assert titles == [*(title for title, _ in GROUPS), "global options"]
        for command in COMMANDS:
            spelled = " ".join(command.words)
            assert sum(line.split("  ")[1:2] == [spelled] for line in text.splitlines()) == 1

    def test_cortex_help_of_a_command_is_its_help(self, cli: Cli) -> None:
        out = cli("help", "case", "open", human=True)
        assert out.code == 0
        opened = next(c for c in COMMANDS if c.words == ("case", "open"))
        assert out.stdout == command_help(opened) + "\n"
        assert "(default: change)" in out.stdout
        decisions = sum(c.words[:2] == ("case", "decision") for c in COMMANDS)
        text = cli("help", "case", "decision", human=True).stdout
        assert text.count("case decision") == decisions + 1  # the usage line and one per command

    def test_a_script_asking_for_json_still_gets_an_envelope(self, cli: Cli) -> None:
        out = cli()
        assert (out.code, out.error_code) == (4, "invalid_input")
        assert cli("help", "nope").code == 4

    def test_every_grouped_name_is_a_command(self) -> None:
        names = {c.name for c in COMMANDS}
        grouped = [name for _, members in GROUPS for name in members]
        assert sorted(set(grouped) - names) == []
        assert len(grouped) == len(set(grouped))
