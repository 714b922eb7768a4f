"""`todo-free`: a Cortex verifier that fails while a changed file still holds a TODO marker.

`todo-free` looks for the words TODO and FIXME, `todo-free:WORD` for WORD instead (say
`todo-free:HACK`). Only the files the task changed are read, as they are in the workspace now.
Registered in pyproject.toml under the `cortex.verifiers` entry-point group, so a plan names it
with `cortex case plan ... --verify todo-free`.
"""

from __future__ import annotations

import os
import re
import stat

from cortex.verifiers.base import Context, Finding, Outcome, Status, split

__version__ = "0.1.0"

DEFAULT_MARKERS = ("TODO", "FIXME")
READ_MAX = 1 << 20
"""Bytes read per file: a verifier must stay fast and bounded on a huge generated file."""
LINES_SHOWN = 10
"""Line numbers named per file in a finding; the raw report has every matching line."""

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")


class TodoFreeVerifier:
    """The `todo-free` kind: one instance serves every `todo-free[:WORD]` requirement."""

    kind = "todo-free"
    version = __version__
    """Recorded on every receipt, so a reader knows which rules produced it."""

    def check(self, requirement: str, context: Context) -> str | None:  # noqa: ARG002
        """Refuse a marker that is not a plain word before anything runs."""
        _, word = split(requirement)
        if word is not None and not _WORD.fullmatch(word):
            return f"{requirement}: the marker must be a word (a letter, then letters, digits, _)"
        return None

    def run(self, requirement: str, context: Context) -> Outcome:
        """Read each changed file and report the lines that hold a marker."""
        _, word = split(requirement)
        markers = (word,) if word else DEFAULT_MARKERS
        label = "/".join(markers)
        if context.changed is None:
            # Without the list of changed files nothing was checked: neither pass nor fail.
            return Outcome(
                status="blocked",
                summary=f"{self.kind}: the changed files are unknown",
                notes=[context.start.reason or "git could not list the changed files"],
            )
        pattern = re.compile(rb"\b(?:%b)\b" % b"|".join(re.escape(m.encode()) for m in markers))
        contracts: dict[str, Status] = {}
        findings: list[Finding] = []
        report: list[bytes] = []
        skipped = cut = 0
        for path in context.changed:
            scanned = _scan(os.path.join(context.root, path), pattern)
            if scanned is None:
                skipped += 1
                continue
            hits, truncated = scanned
            cut += truncated
            contracts[path] = "failed" if hits else "passed"
            if hits:
                numbers = ", ".join(str(n) for n, _ in hits[:LINES_SHOWN])
                more = f" and {len(hits) - LINES_SHOWN} more" if len(hits) > LINES_SHOWN else ""
                claim = f"{path} still has {label} markers at line(s) {numbers}{more}"
                findings.append(Finding(kind="lint", claim=claim))
                report += [b"%s:%d: %s\n" % (os.fsencode(path), n, text) for n, text in hits]
        marked = sum(1 for status in contracts.values() if status == "failed")
        notes = []
        if skipped:
            notes.append(f"{skipped} changed file(s) not read: deleted, not a regular file, binary")
        if cut:
            notes.append(f"{cut} file(s) read only up to {READ_MAX} bytes")
        counts = {"files": len(contracts), "withMarkers": marked, "skipped": skipped}
        if not marked:
            return Outcome(
                status="passed",
                summary=f"{self.kind}: no {label} marker in {len(contracts)} changed file(s)",
                notes=notes,
                evidence_kind="lint",
                contracts=contracts,
                details=counts,
            )
        summary = f"{self.kind}: {marked} of {len(contracts)} changed file(s) hold a {label} marker"
        return Outcome(
            status="failed",
            summary=summary,
            notes=notes,
            raw=b"".join(report),
            evidence_kind="lint",
            findings=findings,
            contracts=contracts,
            details=counts,
        )


def _scan(path: str, pattern: re.Pattern[bytes]) -> tuple[list[tuple[int, bytes]], bool] | None:
    """(line number, line) for each match, and whether the read was cut; None if not text.

    A symbolic link is not followed (it could point outside the workspace) and a FIFO cannot
    block the open; a file with a NUL byte is taken for binary.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        data = handle.read(READ_MAX + 1)
    truncated = len(data) > READ_MAX
    data = data[:READ_MAX]
    if b"\0" in data:
        return None
    hits = [
        (number, line.strip())
        for number, line in enumerate(data.splitlines(), start=1)
        if pattern.search(line)
    ]
    return hits, truncated
