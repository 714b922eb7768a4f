"""The lease cannot be taken through the back door (issue 27; docs/design/trust.md, lease tokens).

`block`, `unblock` and `abort` of a case whose change lease is active need the holder (its name
with its token) or a person at a terminal. Before, another actor could block the case (which
ends the lease), unblock it and take the lease with `begin-change`. Real processes: an agent's
tool call has no controlling terminal; a person's shell has one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Cli, case_path, ready_to_verify
from stand_ins import token_for
from trust_kit import at_terminal, detached

from cortex.cases.records import CaseFile, decode

pytestmark = pytest.mark.process  # its tests start cortex processes


def revision(env: dict[str, str], task: str) -> int:
    return decode((case_path(env, task) / "case.json").read_bytes(), CaseFile).revision


def without_token(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "CORTEX_LEASE_TOKEN"}


@pytest.fixture
def held(cli: Cli, repo: Path) -> str:
    """A change case whose lease agent-1 holds (its token kept by the harness)."""
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    return ready_to_verify(cli)


@pytest.mark.parametrize(
    "args",
    [
        ["case", "block", "--reason", "mine now", "--actor", "agent-2"],
        ["case", "abort", "--reason", "mine now", "--actor", "agent-2"],
        ["case", "block", "--reason", "mine now", "--actor", "agent-1"],  # the name, no token
        ["case", "block", "--reason", "mine now"],  # the holder by default, no token
        [
            "case",
            "abort",
            "--reason",
            "mine now",
            "--actor",
            "agent-1",
            "--lease-token",
            "cortex-lease-" + "x" * 43,
        ],
    ],
    ids=["block-other", "abort-other", "block-same-name", "block-default", "abort-wrong-token"],
)
def test_an_agent_without_the_token_cannot_stop_a_held_case(
    held: str, env: dict[str, str], repo: Path, args: list[str]
) -> None:
    before = revision(env, held)
    out = detached([*args[:2], held, *args[2:]], without_token(env), repo)
    assert out.code == 6, out.stdout + out.stderr
    assert out.error_code == "lease_conflict"
    assert "agent-1" in out.envelope["error"]["message"]
    assert revision(env, held) == before


def test_the_back_door_is_shut_block_unblock_begin_change(
    held: str, env: dict[str, str], repo: Path
) -> None:
    other = {**without_token(env), "CORTEX_ACTOR": "agent-2"}
    assert detached(["case", "block", held, "--reason", "x"], other, repo).code == 6
    taken = detached(["case", "begin-change", held], other, repo)
    assert taken.code == 6, taken.stdout


def test_the_holder_with_its_token_may_block_and_unblock(
    held: str, env: dict[str, str], repo: Path
) -> None:
    token = token_for(env, held)
    assert token is not None
    mine = {**without_token(env), "CORTEX_LEASE_TOKEN": token}
    out = detached(["case", "block", held, "--reason", "waiting on CI", "--actor", "agent-1"],
                   mine, repo)  # fmt: skip
    assert out.code == 0, out.stdout
    # Blocking ended the lease: unblocking needs no token any more.
    back = detached(["case", "unblock", held, "--reason", "CI is back"], without_token(env), repo)
    assert back.code == 0, back.stdout


def test_a_person_at_a_terminal_may_always_stop_a_case(
    held: str, env: dict[str, str], repo: Path
) -> None:
    out, _ = at_terminal(
        ["case", "abort", held, "--reason", "stop this", "--actor", "alice"],
        without_token(env),
        repo,
        typed=None,
        prompt=b"",
    )
    assert out.code == 0, out.stdout + out.stderr
    assert out.envelope["data"]["status"] == "abandoned"


def test_once_the_lease_is_released_anyone_may_block(
    held: str, cli: Cli, env: dict[str, str], repo: Path
) -> None:
    assert cli("case", "lease", "release", held, "--actor", "agent-1").code == 0
    out = detached(["case", "block", held, "--reason", "x", "--actor", "agent-2"],
                   without_token(env), repo)  # fmt: skip
    assert out.code == 0, out.stdout
