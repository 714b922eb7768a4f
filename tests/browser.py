"""Headless Chromium driven over the DevTools protocol on a pipe (no websocket, no packages).

`--remote-debugging-pipe` makes Chromium read protocol commands from fd 3 and answer on fd 4,
each message JSON ended by NUL. That is enough to load a page with script execution turned off
(`Emulation.setScriptExecutionDisabled`, which no command-line switch does any more), read the
DOM as the browser built it, and take a screenshot. Used by tests/test_report_browser.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find() -> str | None:
    """The Chromium program on PATH, or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium process and one page of it."""

    def __init__(self, program: str, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cortex-chromium-")
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()
        os.set_inheritable(to_child, True)  # noqa: FBT003 - os's own signature
        os.set_inheritable(from_child, True)  # noqa: FBT003

        def fds() -> None:
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen(
            [
                program,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,  # noqa: PLW1509 - only dup2 between fork and exec
            pass_fds=(3, 4),
            close_fds=True,
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Log.enable", session=True)

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._write, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                msg = "Chromium did not answer in time"
                raise TimeoutError(msg)
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    msg = "Chromium closed the protocol pipe"
                    raise RuntimeError(msg)
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(line)
        return message

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    msg = f"{method}: {answer['error']}"
                    raise RuntimeError(msg)
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event `method` of the page (one already received counts)."""
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        deadline = time.monotonic() + self.timeout
        while True:
            event = self._receive(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def load(self, url: str, *, script: bool) -> str:
        """Load `url` (scripts on or off) and return the DOM as the browser built it."""
        self.call("Emulation.setScriptExecutionDisabled", session=True, value=not script)
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        time.sleep(0.2)  # let a script that runs on load finish its work
        root = self.call("DOM.getDocument", session=True, depth=-1)["root"]["nodeId"]
        html: str = self.call("DOM.getOuterHTML", session=True, nodeId=root)["outerHTML"]
        return html

    def text(self) -> str:
        """The page's rendered text (what a person can read), from the accessibility tree."""
        nodes = self.call("Accessibility.getFullAXTree", session=True)["nodes"]
        words = []
        for node in nodes:
            name = node.get("name", {}).get("value")
            if node.get("role", {}).get("value") in {"StaticText", "text"} and name:
                words.append(str(name))
        return "\n".join(words)

    def screenshot(self, path: Path) -> None:
        """A PNG of the whole page."""
        shot = self.call(
            "Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def messages(self) -> list[str]:
        """Console and log entries seen so far (CSP violations are reported there)."""
        found = []
        for event in self.events:
            if event.get("method") == "Log.entryAdded":
                found.append(str(event["params"]["entry"].get("text", "")))
            elif event.get("method") == "Runtime.consoleAPICalled":
                found.append(json.dumps(event["params"].get("args", [])))
        return found

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._read)
        os.close(self._write)
        shutil.rmtree(self.profile, ignore_errors=True)
