"""The report in a real browser: headless Chromium, driven over the DevTools pipe.

- opened from `file://` with JavaScript disabled, every section is there to read;
- served from 127.0.0.1 under Jenkins' default Content-Security-Policy header (which blocks
  every style and script), the content stays readable;
- a script injected into the page unescaped (as an escaping bug would) stays blocked by the
  page's own policy, while the hashed script still runs.

Chromium comes from the distribution's packages (`.ci/browser` installs it in CI); without it
these tests skip and say so. Screenshots go to `$CORTEX_TEST_ARTIFACTS` (default: a folder in
the system's temp directory), never into the repository.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from browser import Browser, find
from conftest import Cli, configure_verifiers, ready_to_verify

from cortex.report import links

JENKINS_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'self';"
"""Jenkins' default for files it serves from a workspace or an archived artifact."""
HEADINGS = [heading for _, heading in links.SECTIONS]
PROGRAM = find()

pytestmark = pytest.mark.skipif(
    PROGRAM is None,
    reason="headless Chromium is not installed: .ci/browser installs it from the "
    "distribution's packages (apt-get install chromium, as root)",
)


def artifacts() -> Path:
    where = Path(
        os.environ.get("CORTEX_TEST_ARTIFACTS")
        or Path(tempfile.gettempdir()) / "cortex-test-artifacts"
    )
    path = where / "report"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert PROGRAM is not None
    chromium = Browser(PROGRAM)
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture
def report(cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path) -> Path:
    """The HTML report of a verified case with evidence, a decision and raw output."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    raw = b"collected 3 items\n<script>alert(1)</script>\nall passed\n"
    added = cli("case", "evidence", "add", task, "--claim", "suite output", "--raw-file", "-",
                stdin=raw)  # fmt: skip
    assert added.code == 0
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).code == 0
    target = tmp_path / "site" / "report.html"
    target.parent.mkdir()
    out = cli("case", "report", task, "--html", str(target))
    assert out.code == 0, out.stdout
    return target


def readable(browser: Browser, dom: str) -> str:
    """The text a person sees, after checking every section is in the page."""
    text = browser.text()
    for section, heading in links.SECTIONS:
        assert f'id="{section}"' in dom, section
        assert heading in text, heading
    assert "[VERIFIED]" in text
    assert "[PASSED]" in text
    return text


def test_file_url_with_javascript_disabled_shows_every_section(
    browser: Browser, report: Path
) -> None:
    dom = browser.load(report.as_uri(), script=False)
    text = readable(browser, dom)
    assert "<script>alert(1)</script>" in text  # raw output, shown as text
    assert 'type="search"' not in dom  # the filter box is the script's: it did not run
    browser.screenshot(artifacts() / "file-no-javascript.png")


def test_file_url_with_javascript_runs_only_the_hashed_script(
    browser: Browser, report: Path
) -> None:
    dom = browser.load(report.as_uri(), script=True)
    readable(browser, dom)
    assert dom.count('type="search"') == 2  # evidence and timeline tables got their filter
    assert not [m for m in browser.messages() if "Content Security Policy" in m]


class _Handler(SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", JENKINS_CSP)
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        del format, args


@pytest.fixture
def served(report: Path) -> Iterator[str]:
    """The report's folder served from 127.0.0.1 with Jenkins' default CSP header."""

    def handler(*args: Any, **kwargs: Any) -> _Handler:
        return _Handler(*args, directory=str(report.parent), **kwargs)

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{report.name}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_under_jenkins_default_csp_the_content_stays_readable(
    browser: Browser, served: str
) -> None:
    dom = browser.load(served, script=True)
    readable(browser, dom)
    assert 'type="search"' not in dom  # the sandbox blocked the script; the rows are all there
    rows = len(re.findall(r"<tr>", dom))
    assert rows > 10
    browser.screenshot(artifacts() / "jenkins-csp.png")


def test_an_injected_unescaped_script_stays_blocked(
    browser: Browser, report: Path, tmp_path: Path
) -> None:
    page = report.read_text(encoding="utf-8")
    injected = (
        '<script>document.body.setAttribute("data-pwned", "script")</script>'
        "<img src=\"x\" onerror=\"document.body.setAttribute('data-pwned', 'handler')\">"
        "<a href=\"javascript:document.body.setAttribute('data-pwned', 'link')\">x</a>"
    )
    assert "<main>" in page
    bad = tmp_path / "injected.html"
    bad.write_text(page.replace("<main>", "<main>" + injected, 1), encoding="utf-8")
    dom = browser.load(bad.as_uri(), script=True)
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None
    assert "data-pwned" not in body.group()
    assert dom.count('type="search"') == 2  # the page's own, hashed script still ran
    blocked = [m for m in browser.messages() if "Content Security Policy" in m]
    assert blocked, browser.messages()
    browser.screenshot(artifacts() / "injected-script.png")
