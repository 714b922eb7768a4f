"""`cortex config`: every value, where it came from, and whether each verifier may run."""

from __future__ import annotations

from pathlib import Path

from conftest import Cli, tree_state

from cortex.kernel.proof import grants


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults_say_so(cli: Cli) -> None:
    """With no configuration, every value is its default and no file was read."""
    data = cli("config").data
    assert data["files"] == []
    assert all(value["default"] for value in data["values"].values())
    assert data["values"]["lock_timeout"]["value"] == 10.0
    assert data["verifiers"] == {}


def test_each_value_names_its_sources(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Files and the environment, lowest precedence first; the winning value is shown."""
    write(repo / "pyproject.toml", "[tool.cortex]\nlock_timeout = 3\n")
    write(repo / "cortex.toml", "cases_dir = '.cortex/cases'\n")
    env["CORTEX_LOCK_TIMEOUT"] = "7"
    data = cli("config").data
    assert data["files"] == [
        str(repo / "pyproject.toml") + " [tool.cortex]",
        str(repo / "cortex.toml"),
    ]
    timeout = data["values"]["lock_timeout"]
    assert timeout["value"] == 7.0
    assert timeout["sources"] == ["CORTEX_LOCK_TIMEOUT"]
    assert timeout["environment"] == "CORTEX_LOCK_TIMEOUT"
    cases = data["values"]["cases_dir"]
    assert cases["value"] == str(repo / ".cortex" / "cases")
    assert cases["sources"] == [str(repo / "cortex.toml")]
    assert "cases_dir" in cli("config", human=True).stdout


def test_redaction_literals_are_counted_not_shown(cli: Cli, repo: Path) -> None:
    """A literal is a secret: the output says how many there are and where from, never which."""
    literal = "tenant-7731-made-up"
    write(repo / "cortex.toml", f"redact_literals = ['{literal}']\n")
    out = cli("config")
    assert literal not in out.stdout
    assert out.data["values"]["redact_literals"]["value"].startswith("1 literal")
    assert literal not in cli("config", human=True).stdout


def test_verifiers_say_whether_they_may_run(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Not approved, approved by a grant for that argv, or approved by the environment."""
    write(repo / "cortex.toml", '[verifiers.unit]\nargv = ["true"]\ntimeout = 5\n')
    unit = cli("config").data["verifiers"]["unit"]
    assert unit["argv"] == ["true"]
    assert unit["timeout"] == 5.0
    assert unit["source"] == str(repo / "cortex.toml")
    assert unit["approval"].startswith("not approved")
    grants.save_grant(env, str(repo), "unit", ["true"], "2026-12-01T00:00:00.000Z")
    assert "grant" in cli("config").data["verifiers"]["unit"]["approval"]
    write(repo / "cortex.toml", '[verifiers.unit]\nargv = ["true", "--changed"]\n')
    assert cli("config").data["verifiers"]["unit"]["approval"].startswith("not approved")
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    assert "CORTEX_APPROVE_COMMANDS" in cli("config").data["verifiers"]["unit"]["approval"]


def test_a_bad_file_is_named_and_nothing_is_written(cli: Cli, repo: Path, state_root: Path) -> None:
    """An invalid key fails closed with its file and key; showing never writes."""
    before = tree_state(state_root)
    write(repo / "cortex.toml", "lock_timeout = 'soon'\n")
    out = cli("config")
    assert out.error_code == "config_error"
    assert "cortex.toml" in out.envelope["error"]["message"]
    assert "lock_timeout" in out.envelope["error"]["message"]
    write(repo / "cortex.toml", "lock_timeout = 2\n")
    assert cli("config").code == 0
    assert tree_state(state_root) == before
