"""Issue 20: one progress channel, drawn at a terminal (over MCP: tests/test_mcp_progress.py).

A person at a terminal sees which verifier runs and for how long (a pseudo-terminal stands in
for one); piped and `--json` output stay byte for byte what they were; `--follow` shows the
verifier's output live without a secret of the corpus reaching the screen, however the verifier
splits its writes; Ctrl-C still stops the group and writes nothing; and the CLI's rendering and
the MCP notifications are drawn from one stream of events.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Cli, case_path, configure_verifiers, ready_to_verify
from stand_ins import leased
from terminal_kit import Screen, terminal_env

from cortex.cases.redact import Redactor
from cortex.kernel.progress import Progress
from cortex.kernel.proof.follow import LINE_MAX, STOPPED, Lines


def sleeper(seconds: float, *, lines: int = 0) -> list[str]:
    code = "import time\n"
    code += f"for n in range({lines}):\n    print('step', n, flush=True)\n"
    code += f"time.sleep({seconds})\n"
    return [sys.executable, "-c", code]


@pytest.mark.process
def test_a_terminal_sees_the_running_verifier_and_its_elapsed_time(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    configure_verifiers(repo, env, {"slow": sleeper(3)})
    task = ready_to_verify(cli, verify=("command:slow",))
    (repo / "app.py").write_text("print('changed')\n")
    screen = Screen(["case", "verify", task], terminal_env(env), repo)
    assert screen.wait() == 0
    batch = screen.when("Batch ")
    before = screen.plain(before=batch - 0.001)
    assert "command:slow" in before
    elapsed = set(re.findall(r"command:slow\s+(\d+)s of 120s", before))
    assert len(elapsed) >= 2, before  # the time moved while it ran: 0s, 1s, 2s ...
    # The live line is gone: the answer stands where it was.
    assert "Batch " in screen.plain()
    assert "passed" in screen.plain()


@pytest.mark.process
def test_quiet_shows_nothing_live(cli: Cli, env: dict[str, str], repo: Path) -> None:
    configure_verifiers(repo, env, {"slow": sleeper(1.5)})
    task = ready_to_verify(cli, verify=("command:slow",))
    (repo / "app.py").write_text("print('changed')\n")
    screen = Screen(["case", "verify", task, "--quiet"], terminal_env(env), repo)
    assert screen.wait() == 0
    assert "of 120s" not in screen.plain()
    assert "Batch " in screen.plain()


@pytest.mark.process
def test_json_at_a_terminal_is_one_envelope(cli: Cli, env: dict[str, str], repo: Path) -> None:
    configure_verifiers(repo, env, {"slow": sleeper(1.5)})
    task = ready_to_verify(cli, verify=("command:slow",))
    (repo / "app.py").write_text("print('changed')\n")
    screen = Screen(["case", "verify", task, "--json"], terminal_env(env), repo)
    assert screen.wait() == 0
    lines = [line for line in screen.plain().splitlines() if line.strip()]
    assert len(lines) == 1
    assert json.loads(lines[0])["ok"] is True


@pytest.mark.process
def test_without_a_terminal_the_output_is_what_it_was() -> None:
    """Piped text and --json, byte for byte as before the channel (tests/verify_golden.py)."""
    from verify_golden import GOLDEN, outputs

    for name, text in outputs(ROOT).items():
        assert text == (GOLDEN / name).read_text(), name


@pytest.mark.process
def test_ctrl_c_during_a_live_verify_stops_the_group_and_writes_nothing(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    code = f"import os, time\nopen({str(pids)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    configure_verifiers(repo, env, {"slow": [sys.executable, "-c", code]})
    task = ready_to_verify(cli, verify=("command:slow",))
    (repo / "app.py").write_text("print('changed')\n")
    before = (case_path(env, task) / "case.json").read_bytes()
    screen = Screen(["case", "verify", task], terminal_env(env), repo)
    screen.read(until=30, stop="1s of 120s")
    assert pids.exists()
    os.write(screen.fd, b"\x03")  # Ctrl-C, as the terminal sends it
    assert screen.wait() == 130
    verifier = int(pids.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(verifier, 0)
    assert (case_path(env, task) / "case.json").read_bytes() == before
    assert "interrupted" in screen.plain()


# --follow -----------------------------------------------------------------------------------


def _corpus_verifier(tmp_path: Path) -> tuple[list[str], list[str], list[str]]:
    """A verifier printing the secret corpus split across writes; (argv, needles, visible)."""
    from secret_kit import CORPUS, join

    text = join(CORPUS.entries, "FOLLOW-LABEL corpus follows")
    visible = [f"VISIBLE-LINE-{n} nothing secret here" for n in range(3)]
    data = tmp_path / "follow.json"
    data.write_text(json.dumps({"visible": visible, "text": text}))
    script = tmp_path / "follow_verifier.py"
    script.write_text(
        "import json, random, sys, time\n"
        f"d = json.load(open({str(data)!r}))\n"
        "rng = random.Random(7)\n"
        "for line in d['visible']:\n"
        "    print(line, flush=True)\n"
        "time.sleep(1.0)\n"
        "t = d['text']\n"
        "i = 0\n"
        "while i < len(t):\n"
        "    n = rng.randint(1, 9)\n"
        "    sys.stdout.write(t[i:i + n]); sys.stdout.flush()\n"
        "    if rng.random() < 0.05: time.sleep(0.02)\n"
        "    i += n\n"
        "sys.stdout.write('\\n'); sys.stdout.flush()\n"
        "time.sleep(2.0)\n"
        "print('FOLLOW-LAST done')\n"
    )
    return [sys.executable, str(script)], CORPUS.needles, visible


def _follow_case(cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path) -> tuple[str, Any]:
    """A case whose verifier prints the corpus, with the corpus's literals configured."""
    from secret_kit import CORPUS

    argv, needles, visible = _corpus_verifier(tmp_path)
    literals = CORPUS.toml_literals + CORPUS.pyproject_literals
    lines = [f"redact_literals = {json.dumps(literals)}", "", "[verifiers.noisy]"]
    lines += [f"argv = {json.dumps(argv)}", ""]
    (repo / "cortex.toml").write_text("\n".join(lines))
    env["CORTEX_REDACT_LITERALS"] = ",".join(CORPUS.env_literals)
    task = ready_to_verify(cli, verify=("command:noisy",))
    (repo / "app.py").write_text("print('changed')\n")
    return task, (needles, visible)


def _leaks(text: str, needles: list[str]) -> list[str]:
    return [n for n in needles if n in text]


@pytest.mark.process
def test_follow_at_a_terminal_shows_lines_live_and_no_secret(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    task, (needles, visible) = _follow_case(cli, env, repo, tmp_path)
    screen = Screen(["case", "verify", task, "--follow"], terminal_env(env), repo)
    assert screen.wait() == 0, screen.plain()
    shown = screen.plain()
    assert _leaks(shown, needles) == []
    for line in visible:
        assert line in shown
    # Seen while the run went on: the verifier sleeps 2 s after its output, then ends.
    assert screen.when(visible[-1]) < screen.when("Batch ") - 1.5
    assert screen.when("FOLLOW-LABEL") < screen.when("Batch ") - 1.5
    # Lines the corpus holds outside its secrets are shown too, redacted.
    assert "[REDACTED]" in shown
    stored = b"".join(p.read_bytes() for p in (case_path(env, task) / "raw").iterdir())
    assert _leaks(stored.decode("utf-8", "replace"), needles) == []


@pytest.mark.process
def test_follow_without_a_terminal_writes_lines_to_stderr(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    import subprocess

    task, (needles, visible) = _follow_case(cli, env, repo, tmp_path)
    argv = ["case", "verify", task, "--follow", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex", *argv],
        cwd=repo,
        env=leased({**env, "CORTEX_APPROVE_COMMANDS": "1"}, argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline().decode()
    assert visible[0] in first
    assert proc.poll() is None  # shown before the run ended
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert len(out.decode().splitlines()) == 1  # --json: stdout is the envelope alone
    assert json.loads(out)["ok"] is True
    assert _leaks(first + err.decode(), needles) == []


# The line filter itself -----------------------------------------------------------------------


def _follow(chunks: list[bytes], kept: bytes | None = None) -> list[str]:
    shown: list[str] = []
    lines = Lines(Redactor(), shown.append)
    clock = 0.0
    for chunk in chunks:
        clock += 1.0
        lines.feed(chunk, clock)
    lines.finish(b"".join(chunks) if kept is None else kept)
    return shown


def test_a_partial_line_waits_for_its_end() -> None:
    shown: list[str] = []
    lines = Lines(Redactor(), shown.append)
    lines.feed(b"hello wor", 1.0)
    assert shown == []
    lines.feed(b"ld\nnext", 2.0)
    assert shown == ["hello world"]
    lines.finish(b"hello world\nnext")
    assert shown == ["hello world", "next"]


@pytest.mark.parametrize(
    "text",
    [
        (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
            "KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm\n"
            "-----END RSA PRIVATE KEY-----\nafter\n"
        ),
        "start <private>\nsecretvalue123456\nmore secret\n</private> end\nafter\n",
        '{"password":\n  "hunter2abcdefgh12"}\nafter\n',
        "Authorization:\n  Basic ZmFrZTpzZWNyZXRzZWNyZXQ=\nafter\n",
        "curl -H 'Authorization: Bearer\nabcdefgh1234567890abcdef'\nafter\n",
        (
            # What a cut left of a key: its END line masks the body lines above it, which
            # arrive before it and must not be shown while they wait (found merging issue 18).
            "tail of a key file:\n"
            "KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm\n"
            "-----END RSA PRIVATE KEY-----\nafter\n"
        ),
    ],
)
def test_a_secret_that_spans_lines_is_never_shown_in_part(text: str) -> None:
    secret_words = [w for w in re.findall(r"[A-Za-z0-9+/=]{12,}", text) if w != "after"]
    stored = Redactor()(text)
    for size in (1, 3, 7, len(text)):
        chunks = [text[i : i + size].encode() for i in range(0, len(text), size)]
        shown = "\n".join(_follow(chunks))
        hidden = [w for w in secret_words if w not in stored]
        assert [w for w in hidden if w in shown] == [], (size, shown)
        assert "after" in shown


def test_follow_shows_only_what_the_stored_copy_keeps() -> None:
    from cortex.cases.bounds import OUTPUT_HEAD

    head = b"".join(b"head %05d\n" % n for n in range(OUTPUT_HEAD // 11 + 50))
    kept = head[:OUTPUT_HEAD].rsplit(b"\n", 1)[0] + b"\n[... 999 bytes omitted ...]\ntail\n"
    shown = _follow([head[:OUTPUT_HEAD]], kept=kept)
    assert "head 00000" in shown[0]
    assert len(shown) == head[:OUTPUT_HEAD].count(b"\n") + 2
    assert shown[-2:] == ["[... 999 bytes omitted ...]", "tail"]


def test_a_long_line_is_bounded() -> None:
    shown = _follow([b"x" * (LINE_MAX + 50) + b"\n"])
    assert shown == ["x" * LINE_MAX + "... [50 more characters]"]


def test_a_later_redaction_that_disagrees_stops_following() -> None:
    shown: list[str] = []
    lines = Lines(Redactor(), shown.append)
    lines.feed(b"plain line\n", 1.0)
    lines.finish(b"something else entirely\n")
    assert shown == ["plain line", STOPPED]


# The channel without listeners -------------------------------------------------------------


def test_no_listener_means_no_events_and_no_watch() -> None:
    progress = Progress()
    assert not progress.active
    progress.begin("case.verify", count=2)
    progress.step("capture")
    progress.end()


def test_a_stop_request_raises_cancelled_before_anything_runs() -> None:
    from cortex.verifiers.runner import Cancelled

    progress = Progress(lambda _e: None, cancelled=lambda: True)
    with pytest.raises(Cancelled):
        progress.step("commit")
