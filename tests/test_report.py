"""`cortex case report`: safe by construction, bounded, deterministic (docs/design/report.md).

The XSS corpus goes into every field a case can hold, end to end through the CLI, and into
every string of a gathered report's data; an HTML parser then finds only the renderer's tags
and attributes, no event handler, no href but the link builder's, no raw hidden character,
and an inline style and script whose hashes are the policy's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Cli, case_path, configure_verifiers, git, ready_to_verify

from cortex.report import html as html_form
from cortex.report import links, markdown
from cortex.report.escape import HIDDEN
from cortex.report.tiers import TIERS

sys.path.insert(0, str(ROOT / "bench"))

from run import grow_ledger

EVIL = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "'><svg onload=alert(3)>",
    "</style><script>alert(4)</script>",
    "</script><script>alert(5)</script><!--",
    "javascript:alert(6)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCg3KTwvc2NyaXB0Pg==",
    "invoice\u202egnp.exe",
    "\u2066isolate\u2069 \u200bzero\u200f",
    "nul\x00esc\x1b[31mbell\x07c1\x85del\x7f",
    '<a href="javascript:alert(8)" onclick="alert(9)">x</a>',
    "]]><![CDATA[ {{constructor.constructor('alert(10)')()}}",
]
EVIL_TEXT = " ".join(EVIL)
ALLOWED = {
    "html": {"lang"},
    "head": set(),
    "meta": {"charset", "http-equiv", "content", "name"},
    "title": set(),
    "style": set(),
    "body": set(),
    "header": {"id"},
    "footer": {"id"},
    "main": set(),
    "nav": set(),
    "section": {"id"},
    "h1": set(),
    "h2": set(),
    "h3": set(),
    "p": {"class", "id"},
    "ul": set(),
    "li": set(),
    "table": {"data-filterable"},
    "thead": set(),
    "tbody": set(),
    "tr": set(),
    "th": set(),
    "td": set(),
    "code": set(),
    "pre": set(),
    "span": {"class"},
    "br": set(),
    "a": {"href"},
    "script": {"type", "id"},
}
PERMALINK = re.compile(
    r"https://github\.com/owner/repo/(blob/[0-9a-f]{40}/[A-Za-z0-9%/._~-]+(#L\d+-L\d+)?"
    r"|commit/[0-9a-f]{40})"
)
FRAGMENTS = {links.fragment(section) for section, _ in links.SECTIONS}


class Page(HTMLParser):
    """Every tag, attribute and href of a page, and the contents of its style and scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.hrefs: list[str] = []
        self.styles: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self._in: tuple[str, dict[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        assert len(found) == len(attrs), f"an attribute twice in <{tag}>"
        self.tags.append((tag, found))
        if tag == "a":
            self.hrefs.append(found.get("href") or "")
        if tag in {"style", "script"}:
            self._in = (tag, found)

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[0] == tag:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is None:
            self.text.append(data)
        elif self._in[0] == "style":
            self.styles.append(data)
        else:
            self.scripts.append((self._in[1], data))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def check_page(document: str) -> Page:
    """Everything the issue's proof asks of one HTML report; returns the parsed page."""
    page = Page()
    page.feed(document)
    page.close()
    for tag, attrs in page.tags:
        assert tag in ALLOWED, f"<{tag}> is not the renderer's"
        assert set(attrs) <= ALLOWED[tag], (tag, attrs)
        assert not any(name.startswith("on") for name in attrs)
    for href in page.hrefs:
        assert href in FRAGMENTS or PERMALINK.fullmatch(href), href
    assert page.comments == []
    assert "\u202e" not in document
    assert HIDDEN.search(document.replace("\n", "").replace("\t", "")) is None
    # One style and two scripts: the data block and the hashed constant; the policy names both.
    assert page.styles == [html_form.STYLE]
    (data_attrs, data), (code_attrs, code) = page.scripts
    assert data_attrs == {"type": "application/json", "id": "cortex-report"}
    assert code_attrs == {}
    assert code == html_form.SCRIPT
    assert "<" not in data
    assert ">" not in data
    json.loads(data)
    policies = [a["content"] for t, a in page.tags if t == "meta" and "http-equiv" in a]
    assert len(policies) == 1
    policy = policies[0] or ""
    assert policy == html_form.POLICY
    assert f"style-src {csp_hash(page.styles[0])};" in policy
    assert f"script-src {csp_hash(code)};" in policy
    assert "default-src 'none'" in policy
    # The policy comes before any style or script.
    first = [t for t, _ in page.tags if t in {"meta", "style", "script"}]
    assert first[:2] == ["meta", "meta"]
    return page


def shaped(data: dict[str, Any], tier: int = 0) -> dict[str, Any]:
    from cortex.report.tiers import shape

    return shape(data, tier)


def gathered(cli: Cli, task: str) -> dict[str, Any]:
    """The kernel view's data for `task`, as the report face gets it."""
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.views.report import gather

    kernel = Kernel(str(cli.cwd), cli.env, default_actor="test")
    data: dict[str, Any] = gather(kernel, task)
    return data


ENUMS = {
    "status",
    "standing",
    "state",
    "kind",
    "binding",
    "purpose",
    "severity",
    "completedOn",
    "index",
}
"""Keys the renderer reads as a closed set of words; everything else gets the corpus."""


def poisoned(value: Any, key: str | None = None) -> Any:
    """`value` with the corpus appended to every string (but the closed sets of words)."""
    if isinstance(value, str):
        return value if key in ENUMS else value + " " + EVIL_TEXT
    if isinstance(value, list):
        return [poisoned(item, key) for item in value]
    if isinstance(value, dict):
        return {k: poisoned(v, k) for k, v in value.items()}
    return value


@pytest.fixture
def evil_case(cli: Cli, repo: Path, env: dict[str, str]) -> str:
    """A verified case with the corpus in every field the CLI lets a caller fill."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "remote", "add", "origin", "https://user:tok@github.com/owner/repo.git", env=env)
    clean = " ".join(e for e in EVIL if not re.search("[\x00-\x1f\x7f-\x9f]", e))
    task = cli.open(
        "Fix " + clean, "--mode", "change", "--criterion", "c1=" + clean.replace("=", "-")
    )
    evidence = cli(
        "case", "evidence", "add", task, "--claim", clean, "--kind", "code_location",
        "--file", "src/a b/<x>\u202e'.py", "--line", "3-9", "--symbol", clean,
        "--uri", "javascript:alert(1)",
    ).data["evidence"]["id"]  # fmt: skip
    raw = ("\n".join(EVIL) + "\n").encode()
    assert cli("case", "evidence", "add", task, "--claim", "raw " + clean, "--raw-file", "-",
               stdin=raw).code == 0  # fmt: skip
    assert cli("case", "note", task, clean).code == 0
    plan = cli(
        "case", "plan", task, "--hypothesis", f"{clean} :: {clean}", "--support",
        f"1={evidence}", "--uncertainty", clean, "--file", "app.py", "--boundary-reason",
        clean, "--verify", "command:unit",
    )  # fmt: skip
    assert plan.code == 0, plan.stdout
    assert cli("case", "begin-change", task, "--actor", "agent-1").code == 0
    (repo / "app.py").write_text("print('fixed')\n")
    claim = "c1=" + clean.replace("=", "-")
    verified = cli("case", "verify", task, "--claim", claim, "--contract", "c1=command:unit")
    assert verified.code == 0, verified.stdout
    asked = cli(
        "case", "decision", "request", task, "--question", clean,
        "--option", f"a={clean.replace('=', '-').replace('|', '/')}|{clean.replace('|', '/')}",
        "--option", "b=the other",
    )  # fmt: skip
    assert asked.code == 0, asked.stdout
    return task


def test_the_corpus_in_every_field_stays_text(cli: Cli, evil_case: str, tmp_path: Path) -> None:
    out = cli("case", "report", evil_case, "--html", str(tmp_path / "r.html"))
    assert out.code == 0, out.stdout
    document = (tmp_path / "r.html").read_text(encoding="utf-8")
    page = check_page(document)
    shown = "".join(page.text)
    assert "<script>alert(1)</script>" in shown  # as text, for the reader
    assert "\u27e8U+202E\u27e9" in shown
    # The forge link is built from checked parts: the path quoted, the credentials dropped.
    assert any(h.startswith("https://github.com/owner/repo/blob/") for h in page.hrefs)
    assert "tok" not in document
    assert "javascript:alert(1)" not in page.hrefs
    assert all(not h.startswith(("javascript:", "data:")) for h in page.hrefs)


def test_the_corpus_in_every_string_of_the_data_stays_text(cli: Cli, evil_case: str) -> None:
    data = poisoned(gathered(cli, evil_case))
    for index in range(len(TIERS)):
        document = html_form.render(shaped(data, index)) + html_form.digest_line("0" * 64)
        page = check_page(document)
        # A poisoned forge is no forge: no permalink at all, only the page's own fragments.
        assert set(page.hrefs) <= FRAGMENTS
        md = markdown.render(shaped(data, index))
        assert "\u202e" not in md
        assert "\x00" not in md
        assert not any(line.lstrip().startswith("<") for line in md.splitlines())


def test_the_link_builder_refuses_what_it_cannot_check() -> None:
    forge = {"kind": "github", "host": "github.com", "path": "owner/repo"}
    sha = "a" * 40
    assert links.permalink(forge, sha, "src/a b.py", 3, 9) == (
        f"https://github.com/owner/repo/blob/{sha}/src/a%20b.py#L3-L9"
    )
    assert links.permalink(forge, "main", "a.py", 1, 1) is None
    assert links.permalink(forge, sha[:12], "a.py", 1, 1) is None
    for path in ("/etc/passwd", "../x", "a/../b", "a//b", "a\\b", "a\nb", ""):
        assert links.permalink(forge, sha, path, 1, 1) is None, path
    for bad in (
        {"kind": "github", "host": "evil.example", "path": "o/r"},
        {"kind": "github", "host": "github.com", "path": "o/r/extra"},
        {"kind": "github", "host": "github.com", "path": 'o/r"onclick=x'},
        {"kind": "ftp", "host": "github.com", "path": "o/r"},
    ):
        assert links.permalink(bad, sha, "a.py", 1, 1) is None
    gitlab = {"kind": "gitlab", "host": "gitlab.com", "path": "group/sub/repo"}
    assert links.permalink(gitlab, sha, "a.py", 2, 4) == (
        f"https://gitlab.com/group/sub/repo/-/blob/{sha}/a.py#L2-4"
    )
    assert links.plain_location("a.py", 3, 9, sha) == f"a.py:3-9@{sha}"


def test_the_forge_is_read_from_the_remote_without_credentials() -> None:
    from cortex.workspace.history import forge

    assert forge("https://user:tok@github.com/o/r.git") == ("github", "github.com", "o/r")
    assert forge("git@github.com:o/r.git") == ("github", "github.com", "o/r")
    assert forge("ssh://git@gitlab.com:22/g/s/r.git") == ("gitlab", "gitlab.com", "g/s/r")
    for url in (
        "https://evil.example/o/r",
        "https://github.com/o/r/x",
        "https://github.com/o/r\u202e",
        "file:///srv/repo.git",
        "/srv/repo.git",
        'https://github.com/o/r"x',
        None,
    ):
        assert forge(url) is None, url


def test_the_report_is_deterministic_and_digests_itself(
    cli: Cli, evil_case: str, tmp_path: Path
) -> None:
    first = cli("case", "report", evil_case, "--html", str(tmp_path / "a.html")).data
    second = cli("case", "report", evil_case, "--html", str(tmp_path / "b.html")).data
    a, b = (tmp_path / "a.html").read_bytes(), (tmp_path / "b.html").read_bytes()
    assert a == b
    assert first["sha256"] == second["sha256"]
    body, _, last = a.rstrip(b"\n").rpartition(b"\n")
    assert hashlib.sha256(body + b"\n").hexdigest() == first["sha256"]
    assert first["sha256"].encode() in last
    assert hashlib.sha256(a).hexdigest() == first["fileSha256"]
    updated = cli("case", "status", evil_case).data["updatedAt"]
    assert first["generatedAt"] == updated
    pinned = cli(
        "case", "report", evil_case, "--format", "md", "--generated-at", "2030-01-02T03:04:05Z"
    ).data
    assert pinned["generatedAt"] == "2030-01-02T03:04:05.000Z"
    assert "2030-01-02T03:04:05.000Z" in pinned["document"]
    again = cli(
        "case", "report", evil_case, "--format", "md", "--generated-at", "2030-01-02T03:04:05Z"
    ).data
    assert again["document"] == pinned["document"]


def test_sections_come_in_the_issues_order(cli: Cli, evil_case: str) -> None:
    document = cli("case", "report", evil_case).data["document"]
    where = [document.index(f'id="{section}"') for section, _ in links.SECTIONS]
    assert where == sorted(where)
    md = cli("case", "report", evil_case, "--format", "md").data["document"]
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert [h.split(":")[0] for h in headings] == [f"## {h}" for _, h in links.SECTIONS]
    # Failures are markers in words; colour only repeats them.
    assert "[PASSED]" in document
    assert "[PROOF]" in document
    assert "[PENDING]" in document


def test_bad_options_write_nothing(cli: Cli, task: str, tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    cases = [
        (["--html", str(target), "--format", "md"], "--html"),
        (["--format", "pdf"], "--format"),
        (["--max-bytes", "10"], "--max-bytes"),
        (["--comment", "--max-bytes", "100000"], "--comment"),
        (["--generated-at", "yesterday"], "--generated-at"),
    ]
    for extra, named in cases:
        out = cli("case", "report", task, *extra)
        assert out.code == 4, (extra, out.stdout)
        assert out.error_code == "invalid_input"
        assert named in out.envelope["error"]["message"]
        assert not target.exists()
    out = cli("case", "report", "task_01J00000000000000000000000")
    assert out.code == 3


def test_a_file_inside_the_store_is_refused(cli: Cli, task: str, env: dict[str, str]) -> None:
    inside = case_path(env, task) / "report.html"
    out = cli("case", "report", task, "--html", str(inside))
    assert out.code == 5
    assert not inside.exists()
    assert list(case_path(env, task).glob(".*tmp*")) == []


def test_a_file_is_replaced_whole(cli: Cli, task: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "r.html"
    target.write_text("old")
    out = cli("case", "report", task, "--html", str(target))
    assert out.code == 0
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["r.html"]
    text = cli("case", "report", task, "--html", str(target) + "\x1b[2J", human=True)
    assert text.stdout.startswith(f"Wrote the report of {task} to ")
    assert "\x1b" not in text.stdout  # a path cannot carry a terminal escape
    assert "\u27e8U+001B\u27e9" in text.stdout
    md = cli("case", "report", task, "--format", "md", human=True)
    assert md.stdout.startswith(f"# Case report: `{task}`")
    assert md.stdout == cli("case", "report", task, "--format", "md").data["document"]


def big_case(cli: Cli, repo: Path, env: dict[str, str], lines: int) -> str:
    """A verified case whose evidence ledger holds `lines` more records."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).code == 0
    grow_ledger(case_path(env, task), lines)
    return task


def test_a_hundred_thousand_evidence_lines_stay_within_the_cap(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    task = big_case(cli, repo, env, 100_000)
    for extra, cap in (([], 1024 * 1024), (["--max-bytes", "16384"], 16384)):
        data = cli("case", "report", task, *extra).data
        document = data["document"]
        assert len(document.encode()) <= cap
        assert data["bytes"] <= cap
        assert "This report is cut to fit its size cap" in document
        assert "evidence records not shown" in document
        assert 'id="verdict"' in document
        assert "[VERIFIED]" in document
        assert "[PROOF]" in document
        assert "command:unit" in document
        check_page(document)
    assert cli("case", "report", task, "--max-bytes", "16384").data["tier"] > 0
    md = cli("case", "report", task, "--format", "md").data
    assert md["bytes"] <= 1_000_000
    assert "\\[VERIFIED\\]" in md["document"]
    comment = cli("case", "report", task, "--comment").data
    assert comment["bytes"] <= 64 * 1024
    assert comment["format"] == "md"
    assert "evidence records not shown" in comment["document"]
    assert "\\[PROOF\\]" in comment["document"]


def test_large_claims_are_cut_before_anything_else(cli: Cli, task: str) -> None:
    for index in range(40):
        claim = f"finding {index} " + "x" * 3000
        assert cli("case", "evidence", "add", task, "--claim", claim).code == 0
    full = cli("case", "report", task).data
    assert full["tier"] == 0
    cut = cli("case", "report", task, "--max-bytes", "65536").data
    assert cut["tier"] >= 1
    assert cut["bytes"] <= 65536
    assert "[VERIFIED]" not in cut["document"]  # nothing was verified: the verdict says so
    assert "[UNVERIFIED]" in cut["document"]
    assert any(o["what"] == "evidence claims cut" for o in cut["omitted"]) or cut["tier"] >= 2


def test_a_persons_word_passed_on_by_an_agent_is_shown_as_reported(cli: Cli) -> None:
    """Issue 19: `--origin human` from a pipe is the agent's report of a person, in both forms."""
    task = cli.open("Fix the login redirect")
    said = cli(
        "case", "evidence", "add", task, "--claim", "alice said ship it", "--origin", "human"
    )
    assert said.code == 0, said.stdout
    actor = said.data["evidence"]["source"]["actor"]
    shown = f"human (reported by {actor} via cli)"
    page = cli("case", "report", task).data["document"]
    md = cli("case", "report", task, "--format", "md").data["document"]
    assert f"origin: {shown}" in page
    assert f"(origin: {shown})" in md
