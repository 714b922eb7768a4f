"""Driving the real agent hosts offline: a scripted stand-in for the model, and the CLIs' runs.

Claude Code reads `ANTHROPIC_BASE_URL`; `ScriptedModel` listens on 127.0.0.1 and answers each
`POST /v1/messages` with a streamed message (server-sent events, as the Messages API streams)
holding the next step of its script: a tool call (`Bash` with a command, or any tool with its
input) or a text block that ends the turn. It records every request, so a test asserts on what
actually reached the model: the brief a SessionStart hook added, the reason a Stop hook gave, a
tool's result. Requests without tools are the host's side questions (a title, a summary): they
get a short text and do not advance the script.

The hosts themselves are the npm packages pinned in tests/hosts/package-lock.json, installed by
`.ci/hosts` (or `npm ci` in tests/hosts); `CORTEX_TEST_CLAUDE` may point at another binary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest

HOSTS = Path(__file__).resolve().parent / "hosts"
ROOT = Path(__file__).resolve().parent.parent


def claude_binary() -> str | None:
    """The pinned Claude Code CLI, if installed."""
    given = os.environ.get("CORTEX_TEST_CLAUDE")
    candidate = Path(given) if given else HOSTS / "node_modules" / ".bin" / "claude"
    return str(candidate) if candidate.exists() else None


def need_claude() -> str:
    """The Claude Code CLI, or skip the test saying how to get it."""
    found = claude_binary()
    if found is None:
        pytest.skip("Claude Code is not installed: run .ci/hosts (npm ci in tests/hosts)")
    return found


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class ScriptedModel:
    """The model, played from a script on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self, steps: list[dict[str, Any]], agents: dict[str, list[dict[str, Any]]] | None = None
    ) -> None:
        self.steps = list(steps)
        self.agents = {prompt: list(queue) for prompt, queue in (agents or {}).items()}
        """A subagent's own script, by the prompt its parent gave it (it runs beside the parent,
        so its requests are told apart by their first message)."""
        self.requests: list[dict[str, Any]] = []
        """Every request body with tools, in order (the turns of the conversation)."""
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: object) -> None:
                return

            def do_GET(self) -> None:
                self._plain()

            def do_HEAD(self) -> None:
                self._plain()

            def _plain(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "2")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(b"{}")

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._plain()
                    return
                self._stream(model.answer(body))

            def _stream(self, step: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in model.events(step):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """ANTHROPIC_BASE_URL for the host."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The next step for a turn of the conversation; a side question gets plain text."""
        if not body.get("tools"):
            return {"text": "ok"}
        opening = json.dumps((body.get("messages") or [])[:1])
        with self.lock:
            for prompt, queue in self.agents.items():
                if prompt in opening:
                    return queue.pop(0) if queue else {"text": "Subagent done."}
            self.requests.append(body)
            return self.steps.pop(0) if self.steps else {"text": "Nothing more to do."}

    @staticmethod
    def events(step: dict[str, Any]) -> Iterator[bytes]:
        """One message as the Messages API streams it."""
        message: dict[str, Any] = {
            "id": "msg_stand_in", "type": "message", "role": "assistant", "model": "stand-in",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }  # fmt: skip
        yield _event("message_start", {"type": "message_start", "message": message})
        if "text" in step:
            block: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": step["text"]}
            stop = "end_turn"
        else:
            tool, arguments = (
                ("Bash", {"command": step["bash"], "description": "step"})
                if ("bash" in step)
                else (step["tool"], step["input"])
            )
            block = {"type": "tool_use", "id": f"toolu_{id(step)}", "name": tool, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
            stop = "tool_use"
        yield _event("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": block})  # fmt: skip
        yield _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": delta})  # fmt: skip
        yield _event("content_block_stop", {"type": "content_block_stop", "index": 0})
        end = {"stop_reason": stop, "stop_sequence": None}
        yield _event("message_delta", {"type": "message_delta", "usage": {"output_tokens": 1},
                                       "delta": end})  # fmt: skip
        yield _event("message_stop", {"type": "message_stop"})


def text_of(request: dict[str, Any]) -> str:
    """Everything a request shows the model, as one string (system, messages, tool results)."""
    parts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for key in ("text", "content", "input"):
                if key in value:
                    walk(value[key] if key != "input" else json.dumps(value[key]))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(request.get("system"))
    walk(request.get("messages"))
    return "\n".join(parts)


def last_message(request: dict[str, Any]) -> str:
    """What reached the model since its last turn: every message after its latest one.

    A tool's result, a hook's words, and whatever reminders the host adds beside them.
    """
    messages = request.get("messages") or []
    turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    start = turns[-1] + 1 if turns else 0
    return text_of({"messages": messages[start:]})


def tool_result(request: dict[str, Any]) -> str:
    """The latest tool result a request carries (the host may add reminders after it)."""
    for message in reversed(request.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return text_of({"messages": [{"content": block.get("content")}]})
    return ""


def host_env(base: dict[str, str], home: Path, model: ScriptedModel) -> dict[str, str]:
    """The environment of an offline host run: its own HOME, the stand-in, no telemetry.

    This installation's `cortex` is first on PATH (as after `pipx install`), importing the source
    tree under test (PYTHONPATH), so hooks and the agent's Bash commands run this code.
    """
    home.mkdir(parents=True, exist_ok=True)
    path = os.path.dirname(sys.executable) + os.pathsep + base["PATH"]
    return {
        **base,
        "HOME": str(home),
        "PATH": path,
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "sk-ant-stand-in-not-a-key",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def run_claude(
    claude: str,
    repo: Path,
    env: dict[str, str],
    prompt: str,
    *,
    tools: str = "Bash",
    extra: tuple[str, ...] = (),
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT` in `repo`, offline; --allowedTools, since root may not skip prompts."""
    return subprocess.run(
        [claude, "-p", prompt, "--allowedTools", tools, *extra],
        cwd=repo, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


# Codex ----------------------------------------------------------------------------------------


def codex_binary() -> str | None:
    """The pinned Codex CLI, if installed."""
    given = os.environ.get("CORTEX_TEST_CODEX")
    candidate = Path(given) if given else HOSTS / "node_modules" / ".bin" / "codex"
    return str(candidate) if candidate.exists() else None


def need_codex() -> str:
    """The Codex CLI, or skip the test saying how to get it."""
    found = codex_binary()
    if found is None:
        pytest.skip("the Codex CLI is not installed: run .ci/hosts (npm ci in tests/hosts)")
    return found


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return _event(name, {"type": name, **data})


class ScriptedResponses(ScriptedModel):
    """The model for Codex, which speaks the Responses API (`POST /v1/responses`).

    A `bash` step is a `function_call` of the shell tool Codex offers (`exec_command`, whose
    argument is `cmd`); a `text` step is an assistant message that ends the turn.
    """

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        super().__init__(steps)
        model = self
        handler = self.server.RequestHandlerClass

        def do_post(self: Any) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}")
            if not self.path.endswith("/responses"):
                self._plain()
                return
            self._stream(model.answer(body))

        handler.do_POST = do_post  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """The provider's `base_url`."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Every Responses request is a turn of the conversation."""
        with self.lock:
            self.requests.append(body)
            return self.steps.pop(0) if self.steps else {"text": "Nothing more to do."}

    @staticmethod
    def events(step: dict[str, Any]) -> Iterator[bytes]:
        """One response as the Responses API streams it."""
        rid = f"resp_{id(step)}"
        started = {"id": rid, "object": "response", "status": "in_progress", "output": []}
        yield _sse("response.created", {"response": started})
        item: dict[str, Any]
        if "bash" in step:
            item = {"type": "function_call", "id": f"fc_{id(step)}", "call_id": f"call_{id(step)}",
                    "name": "exec_command", "arguments": json.dumps({"cmd": step["bash"]}),
                    "status": "completed"}  # fmt: skip
            yield _sse("response.output_item.added", {"output_index": 0, "item": item})
        else:
            content = [{"type": "output_text", "text": step["text"], "annotations": []}]
            item = {"type": "message", "id": f"msg_{id(step)}", "role": "assistant",
                    "status": "completed", "content": content}  # fmt: skip
            yield _sse("response.output_item.added", {"output_index": 0,
                                                      "item": {**item, "content": []}})  # fmt: skip
            delta = {"item_id": item["id"], "content_index": 0, "delta": step["text"]}
            yield _sse("response.output_text.delta", {"output_index": 0, **delta})
        yield _sse("response.output_item.done", {"output_index": 0, "item": item})
        usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 2}  # fmt: skip
        yield _sse("response.completed", {"response": {"id": rid, "object": "response",
                                                       "status": "completed", "output": [item],
                                                       "usage": usage}})  # fmt: skip


def codex_provider(model: ScriptedResponses) -> str:
    """The user-level config.toml that points Codex at the stand-in, offline."""
    return (
        'model = "gpt-5.2-codex"\nmodel_provider = "local"\n\n'
        "[model_providers.local]\n"
        'name = "local stand-in"\n'
        f'base_url = "{model.url}"\n'
        'wire_api = "responses"\nenv_key = "CORTEX_TEST_STAND_IN_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n\n"
        "[analytics]\nenabled = false\n"
    )


def run_codex(
    codex: str, repo: Path, env: dict[str, str], prompt: str, *, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`codex exec PROMPT` in `repo`, offline, hooks trusted for this run."""
    return subprocess.run(
        [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         "--dangerously-bypass-hook-trust", "--disable", "plugins", prompt],
        cwd=repo, env={**env, "CORTEX_TEST_STAND_IN_KEY": "stand-in"}, capture_output=True,
        text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def codex_text(request: dict[str, Any]) -> str:
    """Every input item's text of a Responses request, as one string."""
    return (
        text_of({"messages": request.get("input") or []})
        + "\n"
        + json.dumps(
            [i.get("output", "") for i in request.get("input") or [] if isinstance(i, dict)]
        )
    )
