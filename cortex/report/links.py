"""Where every `href` of a report comes from: links built from checked parts, never copied.

Two kinds only: a fragment naming one of the page's own sections, and a permalink to a file
or a commit on a known forge (the forge from `remote.origin.url`, the commit a whole object
id, the path relative and percent-quoted). Anything else is written as plain text
(`path:3-9@<sha>`) by the caller; no other scheme is ever produced (docs/design/report.md).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

SECTIONS = (
    ("verdict", "Verdict"),
    ("case", "Case"),
    ("receipts", "Receipts"),
    ("plan", "Plan"),
    ("decisions", "Decisions"),
    ("evidence", "Evidence"),
    ("timeline", "Timeline"),
    ("raw", "Raw previews"),
    ("integrity", "Integrity"),
)
"""The page's sections, in order: their ids and headings."""
_IDS = frozenset(section for section, _ in SECTIONS)
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HOSTS = {
    "github": "github.com",
    "gitlab": "gitlab.com",
    "bitbucket": "bitbucket.org",
    "codeberg": "codeberg.org",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNSAFE_PATH = re.compile(r"[\x00-\x1f\x7f\\]")


def fragment(section: str) -> str:
    """`#<section>` for one of the page's own sections."""
    if section not in _IDS:
        msg = f"no section {section!r}"
        raise ValueError(msg)
    return "#" + section


def _base(forge: dict[str, Any] | None) -> tuple[str, str] | None:
    """(kind, `https://host/owner/repo`) of a forge the workspace layer recognised, checked."""
    if not forge:
        return None
    kind, host, path = forge.get("kind"), forge.get("host"), forge.get("path")
    if kind not in _HOSTS or _HOSTS[kind] != host or not isinstance(path, str):
        return None
    parts = path.split("/")
    if len(parts) < 2 or (kind != "gitlab" and len(parts) != 2):
        return None
    if not all(_NAME.fullmatch(p) and p not in {".", ".."} for p in parts):
        return None
    return kind, f"https://{host}/{path}"


def _path(path: str | None) -> str | None:
    if not path or path.startswith("/") or _UNSAFE_PATH.search(path):
        return None
    parts = path.split("/")
    if any(p in {"", ".", ".."} for p in parts):
        return None
    return quote(path, safe="/")


def _lines(start: Any, end: Any) -> tuple[int, int] | None:
    if not isinstance(start, int) or isinstance(start, bool) or start < 1:
        return None
    last = end if isinstance(end, int) and not isinstance(end, bool) and end >= start else start
    return start, last


def permalink(
    forge: dict[str, Any] | None, commit: str | None, path: str | None, start: Any, end: Any
) -> str | None:
    """The forge URL of `path` at exactly `commit`, lines `start`-`end`; None when unsafe."""
    base = _base(forge)
    quoted = _path(path)
    if base is None or quoted is None or commit is None or not _OBJECT_ID.fullmatch(commit):
        return None
    kind, root = base
    lines = _lines(start, end)
    if kind == "github":
        url = f"{root}/blob/{commit}/{quoted}"
        return url + (f"#L{lines[0]}-L{lines[1]}" if lines else "")
    if kind == "gitlab":
        url = f"{root}/-/blob/{commit}/{quoted}"
        return url + (f"#L{lines[0]}-{lines[1]}" if lines else "")
    if kind == "bitbucket":
        url = f"{root}/src/{commit}/{quoted}"
        return url + (f"#lines-{lines[0]}:{lines[1]}" if lines else "")
    url = f"{root}/src/commit/{commit}/{quoted}"
    return url + (f"#L{lines[0]}-L{lines[1]}" if lines else "")


def commit_link(forge: dict[str, Any] | None, commit: str | None) -> str | None:
    """The forge URL of one commit; None when the forge or the id is not known to be safe."""
    base = _base(forge)
    if base is None or commit is None or not _OBJECT_ID.fullmatch(commit):
        return None
    kind, root = base
    if kind == "gitlab":
        return f"{root}/-/commit/{commit}"
    if kind == "bitbucket":
        return f"{root}/commits/{commit}"
    return f"{root}/commit/{commit}"


def plain_location(path: str | None, start: Any, end: Any, commit: str | None) -> str:
    """`path:3-9@<sha>`: where a record points, as text (the caller escapes it)."""
    where = path or "-"
    lines = _lines(start, end)
    if lines:
        where += f":{lines[0]}" + (f"-{lines[1]}" if lines[1] != lines[0] else "")
    if commit:
        where += f"@{commit}"
    return where
