"""Issue 12, long calls: a verify longer than the host's timeout survives over MCP.

Driven by the SDK's own stdio client with a 5 s request timeout: a host that resets its timeout
on progress sees a 15 s verifier through to its batch; the same client without resets times out
and no receipt is written; a cancelled verify leaves no verifier process and no partial batch,
and the case records the cancellation (issue 29: it left no trace). The CLI's live line and these
notifications come from one event stream (the last test).
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import pytest
from conftest import Cli, case_path, configure_verifiers, ready_to_verify, tree_state
from mcp_kit import envelope_in, pid_alive, read_pids, run_async, serving, slow_case
from stand_ins import token_for

from cortex.kernel.progress import Event

if TYPE_CHECKING:
    import mcp_types as types

pytestmark = pytest.mark.process  # every test here starts Python processes

TIMEOUT = 5.0
"""The client's request timeout, in seconds (hosts default to 60; the point is the ratio)."""


async def call_resetting(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool with a TIMEOUT that starts again at every progress notification.

    What a host does when it resets its timeout on progress (the TypeScript SDK's
    `resetTimeoutOnProgress`; Python's SDK has no such option, so the test keeps the clock).
    """
    messages: list[str] = []
    with anyio.CancelScope() as scope:
        scope.deadline = anyio.current_time() + TIMEOUT

        async def on_progress(_progress: float, _total: float | None, message: str | None) -> None:
            messages.append(message or "")
            scope.deadline = anyio.current_time() + TIMEOUT

        result = await session.client.call_tool(name, arguments, progress_callback=on_progress)
        return result, messages
    raise TimeoutError(f"no answer and no progress for {TIMEOUT} s")


async def take_lease(session: Any, task: str) -> None:
    """The server takes the change lease (and so holds its token, for its connection)."""
    envelope, _ = await session.call("cortex_begin_change", task_id=task)
    assert envelope["ok"] is True, envelope


def only_the_cancellation_was_recorded(
    env: dict[str, str], repo: Path, task: str, before: dict[str, Any]
) -> dict[str, Any]:
    """The case gained one note saying the verify was cancelled, and nothing else of a verify:
    no batch, no receipt, no phase change. Returns the note."""
    path = case_path(env, task)
    after = tree_state(path)
    changed = {name for name in after.keys() | before.keys() if after.get(name) != before.get(name)}
    assert changed <= {"case.json", "evidence.jsonl", "commands.jsonl", ".lock"}, changed
    assert not (path / "verification.json").exists()
    lines = (path / "evidence.jsonl").read_text().splitlines()
    note: dict[str, Any] = json.loads(lines[-1])
    assert note["kind"] == "note"
    assert note["source"]["tool"] == "cortex"
    assert "verify cancelled" in note["claim"]
    assert "command:slow (1 of 1)" in note["claim"]
    assert "no receipt" in note["claim"]
    audit = Cli(env, repo)("case", "audit", task)
    assert audit.code == 0, audit.stdout
    return note


def wait_dead(pids: list[int], seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(pid_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_a_verify_longer_than_the_timeout_completes_when_progress_resets_it(
    served: dict[str, str], repo: Path, tmp_path: Path, errlog: IO[str]
) -> None:
    import mcp_types as types

    with slow_case(served, repo, tmp_path, 15) as (task, _pids):
        started = time.monotonic()

        async def body() -> None:
            async with serving(repo, served, errlog) as s:
                await take_lease(s, task)
                result, messages = await call_resetting(s, "cortex_verify", {"task_id": task})
                assert isinstance(result, types.CallToolResult)
                envelope = envelope_in(result)
                assert envelope["ok"] is True, envelope
                assert envelope["data"]["batch"]["binding"] == "bound"
                assert any(m.startswith("started command:slow") for m in messages)
                running = [m for m in messages if m.startswith("running command:slow")]
                assert len(running) >= 10, messages  # about one a second for 15 s
                assert "of 120 s" in running[-1]

        run_async(body)
        assert time.monotonic() - started > 15
    data = Cli(served, repo)("case", "status", task).data
    assert data["status"] == "verifying"
    verification = json.loads((case_path(served, task) / "verification.json").read_text())
    assert [batch["binding"] for batch in verification["batches"]] == ["bound"]


def test_without_resets_the_client_times_out_and_only_the_cancellation_is_recorded(
    served: dict[str, str], repo: Path, tmp_path: Path, errlog: IO[str]
) -> None:
    from mcp.shared.exceptions import MCPError

    with slow_case(served, repo, tmp_path, 15) as (task, pids):
        before: dict[str, Any] = {}

        async def body() -> None:
            async with serving(repo, served, errlog) as s:
                await take_lease(s, task)
                before.update(tree_state(case_path(served, task)))
                with pytest.raises(MCPError, match="timed out"):
                    await s.client.call_tool(
                        "cortex_verify", {"task_id": task}, read_timeout_seconds=TIMEOUT
                    )
                # The SDK sent notifications/cancelled: the verifier's group goes at once.
                verifier = read_pids(pids)
                assert verifier
                assert await anyio.to_thread.run_sync(wait_dead, verifier)
                # The server is still there and answers.
                envelope, _ = await s.call("cortex_status", task_id=task)
                assert envelope["data"]["status"] == "changing"

        run_async(body)
        only_the_cancellation_was_recorded(served, repo, task, before)


def test_a_cancelled_verify_leaves_no_process_no_batch_and_a_note(
    served: dict[str, str], repo: Path, tmp_path: Path, errlog: IO[str]
) -> None:
    import mcp_types as types

    with slow_case(served, repo, tmp_path, 30) as (task, pids):
        before: dict[str, Any] = {}
        logged: list[types.LoggingMessageNotificationParams] = []

        async def body() -> None:
            warned = anyio.Event()
            async with serving(repo, served, errlog) as s:
                await take_lease(s, task)
                before.update(tree_state(case_path(served, task)))

                async def log(params: types.LoggingMessageNotificationParams) -> None:
                    logged.append(params)
                    if params.level == "warning":
                        warned.set()

                # The SDK takes the callback at construction; `serving` builds the session.
                s.client._logging_callback = log
                await s.client.send_request(
                    types.SetLevelRequest(params=types.SetLevelRequestParams(level="info")),
                    types.EmptyResult,
                )
                with anyio.move_on_after(3):
                    await s.client.call_tool("cortex_verify", {"task_id": task})
                verifier = read_pids(pids)
                assert verifier
                assert await anyio.to_thread.run_sync(wait_dead, verifier)
                # The client is still there: a last log entry says what the cancellation did.
                with anyio.fail_after(10):
                    await warned.wait()

        run_async(body)
        note = only_the_cancellation_was_recorded(served, repo, task, before)
        warning = next(entry for entry in logged if entry.level == "warning")
        assert "no receipt was written" in str(warning.data)
        assert note["id"] in str(warning.data)
        assert any("started command:slow" in str(entry.data) for entry in logged)


def test_no_log_entries_unless_the_client_asks(
    served: dict[str, str], repo: Path, errlog: IO[str]
) -> None:
    configure_verifiers(repo, served, {"quick": ["true"]})
    task = ready_to_verify(Cli(served, repo), verify=("command:quick",), lease=False)
    (repo / "app.py").write_text("print('changed')\n")
    logged: list[Any] = []

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            await take_lease(s, task)

            async def log(params: Any) -> None:
                logged.append(params)

            s.client._logging_callback = log
            envelope, _ = await s.call("cortex_verify", task_id=task)
            assert envelope["ok"] is True

    run_async(body)
    assert logged == []


def test_the_terminal_and_mcp_render_one_event_stream(
    cli: Cli, env: dict[str, str], repo: Path
) -> None:
    """The CLI's live line and the MCP notifications are fed by the same events."""
    from cortex.cli.live import Reporter, status_text
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.proof.verify import verify
    from cortex.mcp.progress import Relay

    quick = "import time\nprint('a', flush=True)\ntime.sleep({})\n"
    configure_verifiers(
        repo,
        env,
        {
            "a": [__import__("sys").executable, "-c", quick.format(1.3)],
            "b": [__import__("sys").executable, "-c", quick.format(0.1)],
        },
    )
    task = ready_to_verify(cli, verify=("command:a", "command:b"))
    (repo / "app.py").write_text("print('changed')\n")

    class Session:
        def __init__(self) -> None:
            self.progress: list[str] = []

        async def report_progress(self, _p: float, _t: float | None, message: str) -> None:
            self.progress.append(message)

        async def send_notification(self, *_args: object) -> None:
            pass

    class Ctx:
        session = Session()
        request_id = 1
        protocol_version = "2025-11-25"
        meta = None

    seen: list[Event] = []
    lines: list[str] = []
    reporter = Reporter(None, follow=io.StringIO())

    def terminal(event: Event) -> None:
        seen.append(event)
        lines.append(status_text(event))
        reporter(event)

    async def body() -> None:
        relay = Relay(Ctx(), frozenset(), clock=time.monotonic, closing=threading.Event())
        to_mcp = relay.progress.sink
        assert to_mcp is not None

        def both(event: Event) -> None:
            terminal(event)
            to_mcp(event)

        relay.progress.sink = both

        def call() -> Any:
            kernel = Kernel(
                str(repo),
                {**env, "CORTEX_APPROVE_COMMANDS": "1"},
                default_actor="agent-1",
                progress=relay.progress,
            )
            # The lease token the CLI was given when it took the lease (tests/stand_ins.py).
            return verify(kernel, task, lease_token=token_for(env, task)), 0

        result, _ = await relay.run(call)
        assert result.data["assessment"].status == "verified"
        assert relay.events == len(seen)

    anyio.run(body)
    starts = [e for e in seen if e.kind == "start"]
    assert [e.subject for e in starts] == ["command:a", "command:b"]
    mcp_starts = [m for m in Ctx.session.progress if m.startswith("started ")]
    assert len(mcp_starts) == len(starts) == 2
    assert [line for line in lines if line.startswith("command:a (1 of 2)")]
    assert any(m.startswith("running command:a") for m in Ctx.session.progress)
