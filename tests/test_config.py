"""Configuration: sources, precedence, strict validation, and where stores live."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Cli, git

from cortex.kernel.config import committed, load_config, state_root
from cortex.kernel.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class TestPrecedence:
    def test_env_overrides_repo_file_overrides_pyproject_overrides_global(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """lock_timeout: global < [tool.cortex] < cortex.toml < CORTEX_LOCK_TIMEOUT."""
        write(tmp_path / "config" / "cortex" / "config.toml", "lock_timeout = 1\n")
        assert load_config(str(repo), env).lock_timeout == 1
        write(repo / "pyproject.toml", "[project]\nname='x'\n[tool.cortex]\nlock_timeout = 2\n")
        assert load_config(str(repo), env).lock_timeout == 2
        write(repo / "cortex.toml", "lock_timeout = 3\n")
        config = load_config(str(repo), env)
        assert config.lock_timeout == 3
        assert config.sources["lock_timeout"] == [str(repo / "cortex.toml")]
        env["CORTEX_LOCK_TIMEOUT"] = "4.5"
        config = load_config(str(repo), env)
        assert config.lock_timeout == 4.5
        assert config.sources["lock_timeout"] == ["CORTEX_LOCK_TIMEOUT"]

    def test_redaction_literals_accumulate_across_sources(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """Every source can add literals; none can remove another's."""
        write(
            tmp_path / "config" / "cortex" / "config.toml", 'redact_literals = ["global-literal"]\n'
        )
        write(repo / "cortex.toml", 'redact_literals = ["repo-literal"]\n')
        env["CORTEX_REDACT_LITERALS"] = "env-literal-1, env-literal-2"
        literals = load_config(str(repo), env).redact_literals
        assert set(literals) == {"global-literal", "repo-literal", "env-literal-1", "env-literal-2"}

    def test_configured_literals_are_redacted(self, cli: Cli, repo: Path, state_root: Path) -> None:
        """A literal from cortex.toml never reaches the store."""
        write(repo / "cortex.toml", 'redact_literals = ["tenant-7731-internal"]\n')
        task = cli.open("migrate tenant-7731-internal data")
        cli("case", "note", task, "tenant-7731-internal is done")
        blob = b"".join(p.read_bytes() for p in state_root.rglob("*") if p.is_file())
        assert b"tenant-7731-internal" not in blob

    def test_pyproject_without_cortex_is_not_parsed(self, env: dict[str, str], repo: Path) -> None:
        """A pyproject.toml that never mentions cortex is skipped, even if it is not valid TOML."""
        write(repo / "pyproject.toml", "this is [[[ not toml\n")
        assert load_config(str(repo), env).files == []


class TestFailClosed:
    @pytest.mark.parametrize(
        ("text", "key"),
        [
            ("colour = 'blue'\n", "colour"),
            ("lock_timeout = 'fast'\n", "lock_timeout"),
            ("lock_timeout = 0\n", "lock_timeout"),
            ("lock_timeout = 601\n", "lock_timeout"),
            ("lock_timeout = true\n", "lock_timeout"),
            ("redact_literals = 'secret-value'\n", "redact_literals"),
            ("redact_literals = ['abc']\n", "redact_literals"),
            ("redact_literals = [1234]\n", "redact_literals"),
            ("cases_dir = 5\n", "cases_dir"),
            ("cases_dir = '/etc/cortex'\n", "cases_dir"),
            ("cases_dir = '~/cases'\n", "cases_dir"),
            ("cases_dir = '../outside'\n", "cases_dir"),
            ("cases_dir = '.'\n", "cases_dir"),
            ("[review]\nrequire = 'command:lint'\n", "review.require"),
            ("[review]\nrequire = ['']\n", "review.require"),
            ("[review]\nrequire = [1]\n", "review.require"),
            ("[review]\nrequire = [" + "'a'," * 33 + "]\n", "review.require"),
            # Names no plan can hold (issue 27's attack): every case would be refused for good.
            ("[review]\nrequire = ['Not A Verifier']\n", "review.require"),
            ("[review]\nrequire = ['command:lint\\n\\u001b[2J']\n", "review.require"),
        ],
    )
    def test_repo_file_errors_name_the_file_and_key(
        self, cli: Cli, repo: Path, state_root: Path, text: str, key: str
    ) -> None:
        """Unknown keys, wrong types and bad values fail closed (exit 4), naming file and key."""
        path = write(repo / "cortex.toml", text)
        out = cli("case", "open", "goal")
        assert out.code == 4
        assert out.error_code == "config_error"
        message = out.envelope["error"]["message"]
        assert str(path) in message
        assert key in message
        assert not state_root.exists()

    def test_pyproject_table_errors_name_the_table(self, cli: Cli, repo: Path) -> None:
        """An unknown key under [tool.cortex] names pyproject.toml and the key."""
        write(repo / "pyproject.toml", "[tool.cortex]\nlockTimeout = 3\n")
        message = cli("case", "list").envelope["error"]["message"]
        assert "pyproject.toml [tool.cortex]" in message
        assert "lockTimeout" in message

    def test_invalid_toml_is_refused(self, cli: Cli, repo: Path) -> None:
        """A cortex.toml that does not parse is an error, not an empty configuration."""
        write(repo / "cortex.toml", "lock_timeout = = 3\n")
        out = cli("case", "list")
        assert out.code == 4
        assert "cortex.toml" in out.envelope["error"]["message"]

    def test_global_file_errors_too(self, cli: Cli, tmp_path: Path) -> None:
        """The global config is validated as strictly as the repository's."""
        write(tmp_path / "config" / "cortex" / "config.toml", "unknown = 1\n")
        out = cli("case", "list")
        assert out.code == 4
        assert "config.toml: unknown" in out.envelope["error"]["message"]

    @pytest.mark.parametrize(
        ("variable", "value"),
        [
            ("CORTEX_LOCK_TIMEOUT", "soon"),
            ("CORTEX_LOCK_TIMEOUT", "-1"),
            ("CORTEX_CASES_DIR", "relative/dir"),
            ("CORTEX_STATE_DIR", "relative/state"),
            ("CORTEX_REDACT_LITERALS", "ab"),
        ],
    )
    def test_bad_environment_values_fail_closed(
        self, env: dict[str, str], repo: Path, variable: str, value: str
    ) -> None:
        """Environment values are validated like file values, naming the variable."""
        env[variable] = value
        out = Cli(env, repo)("case", "list")
        assert out.code == 4
        assert variable in out.envelope["error"]["message"]


HOSTILE_TOML = [
    pytest.param("a = " + "[" * 5_000 + "]" * 5_000 + "\n", "nested too deeply", id="arrays-5000"),
    pytest.param(
        "a = " + "{b = " * 2_000 + "1" + "}" * 2_000 + "\n", "nested too deeply", id="tables-2000"
    ),
    pytest.param(
        "a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply", id="arrays-100000"
    ),
    pytest.param(
        "a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n",
        "nested too deeply",
        id="tables-100000",
    ),
    pytest.param("# x\nlock_timeout = " + "9" * 5_000 + "\n", "line 2", id="lock_timeout-5000"),
    pytest.param(
        "[verifiers.unit]\nargv = ['x']\ntimeout = 1" + "0" * 5_000 + "\n",
        "line 3",
        id="verifier-timeout-5000",
    ),
]
"""Configuration files that used to answer `internal_error` (RecursionError, ValueError)."""


class TestBoundedParsing:
    """Any file a TOML parser cannot take is a `config_error` naming it, from every source."""

    @pytest.mark.parametrize(("text", "says"), HOSTILE_TOML)
    @pytest.mark.parametrize("source", ["cortex.toml", "pyproject.toml", "global"])
    def test_a_file_too_deep_or_with_a_huge_integer_is_a_config_error(
        self, cli: Cli, repo: Path, source: str, text: str, says: str
    ) -> None:
        if source == "global":
            path = write(Path(cli.env["XDG_CONFIG_HOME"]) / "cortex" / "config.toml", text)
        elif source == "pyproject.toml":
            # The table header is one more line: the huge integer moves down one.
            text = "[tool.cortex]\n" + text.replace("[verifiers.", "[tool.cortex.verifiers.")
            says = says.replace("line 3", "line 4").replace("line 2", "line 3")
            path = write(repo / source, text)
        else:
            path = write(repo / source, text)
        out = cli("case", "list")
        assert out.code == 4, out.stdout[:300]
        assert out.error_code == "config_error"
        message = out.envelope["error"]["message"]
        assert str(path) in message
        assert says in message
        assert out.stderr == ""
        assert not Path(cli.env["CORTEX_STATE_DIR"]).exists()

    def test_an_integer_python_reads_is_checked_by_its_key(self, cli: Cli, repo: Path) -> None:
        """Below Python's limit the value is read, and the range check names the key."""
        write(repo / "cortex.toml", "lock_timeout = " + "9" * 4_299 + "\n")
        out = cli("case", "list")
        assert out.error_code == "config_error"
        assert "cortex.toml: lock_timeout: must be more than 0" in out.envelope["error"]["message"]


class TestStateRoot:
    def test_resolution_order(self, tmp_path: Path) -> None:
        """CORTEX_STATE_DIR, else $XDG_STATE_HOME/cortex, else ~/.local/state/cortex."""
        home = str(tmp_path / "h")
        assert state_root({"HOME": home}) == f"{home}/.local/state/cortex"
        assert (
            state_root({"HOME": home, "XDG_STATE_HOME": "relative"})
            == f"{home}/.local/state/cortex"
        )
        assert state_root({"HOME": home, "XDG_STATE_HOME": "/x"}) == "/x/cortex"
        assert state_root({"HOME": home, "XDG_STATE_HOME": "/x", "CORTEX_STATE_DIR": "/s"}) == "/s"
        with pytest.raises(ConfigError):
            state_root({})

    def test_cases_dir_env_replaces_the_store_directory(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """CORTEX_CASES_DIR is used as the cases root itself."""
        env["CORTEX_CASES_DIR"] = str(tmp_path / "cases")
        task = Cli(env, repo).open()
        assert (tmp_path / "cases" / task / "case.json").is_file()


class TestRepoLocalStore:
    def test_repo_local_store_is_git_ignored(self, env: dict[str, str], repo: Path) -> None:
        """A repo-local store ignores its own files (and only those), so git sees no change."""
        write(repo / "cortex.toml", "cases_dir = '.cortex/cases'\n")
        git(repo, "add", "cortex.toml", env=env)
        git(repo, "commit", "-q", "-m", "config", env=env)
        cli = Cli(env, repo)
        task = cli.open()
        cli("case", "note", task, "something")
        assert (repo / ".cortex" / "cases" / task / "case.json").is_file()
        assert "/task_*/" in (repo / ".cortex" / "cases" / ".gitignore").read_text()
        assert not (repo / ".cortex" / ".gitignore").exists()
        assert git(repo, "status", "--porcelain", "--untracked-files=all", env=env) == ""
        assert cli("case", "status", task).data["store"]["root"] == str(repo / ".cortex" / "cases")

    def test_other_repo_local_dirs_ignore_themselves(self, env: dict[str, str], repo: Path) -> None:
        """Any other in-repo cases_dir gets the same .gitignore; other files there still count."""
        write(repo / "cortex.toml", "cases_dir = 'var/cases'\n")
        git(repo, "add", "cortex.toml", env=env)
        git(repo, "commit", "-q", "-m", "config", env=env)
        Cli(env, repo).open()
        assert "/.store.lock" in (repo / "var" / "cases" / ".gitignore").read_text()
        assert git(repo, "status", "--porcelain", "--untracked-files=all", env=env) == ""
        (repo / "var" / "cases" / "plugin.py").write_text("print('code')\n")
        status = git(repo, "status", "--porcelain", "--untracked-files=all", env=env)
        assert status == "?? var/cases/plugin.py"

    def test_a_symlinked_component_is_refused(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """A repository cannot route our writes elsewhere through a symlink."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (repo / ".cortex").symlink_to(outside, target_is_directory=True)
        write(repo / "cortex.toml", "cases_dir = '.cortex/cases'\n")
        out = Cli(env, repo)("case", "open", "goal")
        assert out.code == 4
        assert list(outside.iterdir()) == []

    @pytest.mark.parametrize("where", [".git/cases", "sub/.git/refs"])
    def test_a_store_inside_a_git_directory_is_refused(
        self, env: dict[str, str], repo: Path, where: str
    ) -> None:
        """Case files must never land in .git (they would corrupt it, and show in its fsck)."""
        write(repo / "cortex.toml", f"cases_dir = '{where}'\n")
        before = sorted(p.name for p in (repo / ".git").iterdir())
        out = Cli(env, repo)("case", "open", "goal")
        assert out.error_code == "config_error"
        assert sorted(p.name for p in (repo / ".git").iterdir()) == before

    def test_an_absolute_store_inside_git_is_refused(self, env: dict[str, str], repo: Path) -> None:
        """The environment cannot aim the store into .git either."""
        env["CORTEX_CASES_DIR"] = str(repo / ".git" / "cases")
        assert Cli(env, repo)("case", "open", "goal").error_code == "config_error"

    def test_a_source_directory_is_not_a_store(self, env: dict[str, str], repo: Path) -> None:
        """A store is a directory of its own: an existing source directory is refused."""
        write(repo / "src" / "module.py", "print('code')\n")
        write(repo / "cortex.toml", "cases_dir = 'src'\n")
        out = Cli(env, repo)("case", "open", "goal")
        assert out.error_code == "invalid_input"
        assert sorted(p.name for p in (repo / "src").iterdir()) == ["module.py"]

    def test_global_cases_dir_may_be_absolute(
        self, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """The user's own config may place the store anywhere."""
        write(
            tmp_path / "config" / "cortex" / "config.toml", f"cases_dir = '{tmp_path / 'mine'}'\n"
        )
        task = Cli(env, repo).open()
        assert (tmp_path / "mine" / task).is_dir()


def test_the_base_s_require_lists_of_both_files_are_joined() -> None:
    """An empty `require` in cortex.toml does not drop what pyproject.toml requires (issue 27)."""
    found = committed(
        {
            "pyproject.toml": b'[tool.cortex.review]\nrequire = ["command:lint", "pytest"]\n',
            "cortex.toml": b'[review]\nrequire = []\naccept = "remote"\n',
        },
        "base 0123456789ab",
    )
    assert found.require == ("command:lint", "pytest")
    assert found.accept == "remote"
    joined = committed(
        {
            "pyproject.toml": b'[tool.cortex.review]\nrequire = ["command:lint"]\n',
            "cortex.toml": b'[review]\nrequire = ["scope", "command:lint"]\n',
        },
        "base 0123456789ab",
    )
    assert joined.require == ("command:lint", "scope")
