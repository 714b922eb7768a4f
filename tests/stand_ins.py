"""What the test suite stands in for: the agent that keeps its lease token, and the person who
lets a machine answer decisions unattended (docs/design/trust.md).

Most tests drive a case through `Cli` or `run_cortex` and were written when the change lease
belonged to a name and anyone could answer a decision. The rules are not weakened for them:

- **The lease-token book.** Every `begin-change` the harness runs that returns a token is noted
  in a small file beside the test's state directory (never inside it, so tests that compare the
  store's files are not disturbed), keyed by task id. A later command that names that task gets
  `CORTEX_LEASE_TOKEN` in its environment, exactly as an agent's shell would after exporting it,
  unless the command or its environment already gives a token. The kernel still checks the
  holder's name first, so a test acting as another actor is still refused.
- **The answer opt-in.** Before a `decision answer` the harness writes the per-machine opt-in
  (`$XDG_CONFIG_HOME/cortex/unattended-answers.toml`) into the test's own configuration
  directory, as a person configuring a CI job would. Tests of the rule itself pass an
  environment from `without_answer_opt_in`, and the harness leaves it alone.

The children in tests/children/ use the same book, so a process started before the lease was
taken still finds the token when it runs its command.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

TASK = re.compile(r"task_[0-9A-HJKMNP-TV-Z]{26}")
TOKEN = re.compile(r"cortex-lease-[A-Za-z0-9_-]{20,}")
NEED_A_PERSON = "CORTEX_TEST_ANSWERS_NEED_A_PERSON"
"""Set (by `without_answer_opt_in`) where the harness must not opt the machine in."""
OPT_IN = 'stands_for = "the Cortex test suite (tests/stand_ins.py), for the person running it"\n'


def _book(env: Mapping[str, str]) -> Path | None:
    state = env.get("CORTEX_STATE_DIR")
    return None if not state else Path(state).parent / "lease-tokens.json"


def _task(argv: Sequence[str]) -> str | None:
    return next((arg for arg in argv if TASK.fullmatch(arg)), None)


def _read(book: Path) -> dict[str, str]:
    try:
        tokens: dict[str, str] = json.loads(book.read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return tokens


def leased(env: Mapping[str, str], argv: Sequence[str]) -> dict[str, str]:
    """`env`, with the task's lease token from the book if the command gives none itself."""
    book, task = _book(env), _task(argv)
    given = "--lease-token" in argv or any(a.startswith("--lease-token=") for a in argv)
    if book is None or task is None or given or "CORTEX_LEASE_TOKEN" in env:
        return dict(env)
    token = _read(book).get(task)
    return dict(env) if token is None else {**env, "CORTEX_LEASE_TOKEN": token}


def token_for(env: Mapping[str, str], task: str) -> str | None:
    """The task's lease token from the book, for a test that calls the kernel directly."""
    book = _book(env)
    return None if book is None else _read(book).get(task)


def remember(env: Mapping[str, str], argv: Sequence[str], stdout: str) -> None:
    """Note the token a successful `begin-change` returned (JSON or text answer) in the book."""
    book, task = _book(env), _task(argv)
    if book is None or task is None or "begin-change" not in argv:
        return
    token = None
    try:
        envelope = json.loads(stdout)
        if isinstance(envelope, dict) and envelope.get("ok"):
            token = (envelope.get("data") or {}).get("leaseToken")
    except ValueError:
        match = TOKEN.search(stdout)
        token = match.group() if match else None
    if not token:
        return
    tokens = _read(book)
    tokens[task] = token
    tmp = book.with_name(f".{book.name}.{os.getpid()}")
    tmp.write_text(json.dumps(tokens))
    tmp.replace(book)


def opt_in_path(env: Mapping[str, str]) -> Path:
    """Where the per-machine opt-in for unattended answers lives for this environment."""
    return Path(env["XDG_CONFIG_HOME"]) / "cortex" / "unattended-answers.toml"


def opt_in(env: Mapping[str, str]) -> None:
    """Opt the test's machine in to unattended answers (its own configuration directory)."""
    path = opt_in_path(env)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(OPT_IN)
        path.chmod(0o600)


def answering(env: Mapping[str, str], argv: Sequence[str]) -> None:
    """Before the harness runs `decision answer`: opt the test's machine in, once."""
    if list(argv[:3]) != ["case", "decision", "answer"] or env.get(NEED_A_PERSON):
        return
    if "XDG_CONFIG_HOME" in env:
        opt_in(env)


def without_answer_opt_in(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a test of the rule itself: no opt-in now, and the harness writes none."""
    if "XDG_CONFIG_HOME" in env:
        opt_in_path(env).unlink(missing_ok=True)
    return {**env, NEED_A_PERSON: "1"}
