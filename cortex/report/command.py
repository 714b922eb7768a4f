"""What `cortex case report` runs: read the case, fit the cap, digest, write atomically.

The launcher hands the kernel here (faces never import each other). The options are checked
and the data read by the kernel view `cortex.kernel.views.report`; the file is written by the
kernel's `write_output` (temp file, fsync, rename; refused inside the store), the same as
`handoff -o`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from cortex.kernel.envelope import Data, Result
from cortex.kernel.errors import ArgumentError, InvalidInputError
from cortex.kernel.kernel import Kernel
from cortex.report import html, markdown
from cortex.report.tiers import TIERS, shape


def build(data: Data, fmt: str, max_bytes: int) -> tuple[bytes, Data]:
    """The document at the fullest tier that fits `max_bytes`, and that tier's shaped data."""
    form = html if fmt == "html" else markdown
    line = len(form.digest_line("0" * 64).encode("utf-8"))
    needed = 0
    for index in range(len(TIERS)):
        shaped = shape(data, index)
        body = form.render(shaped).encode("utf-8", "surrogatepass")
        needed = len(body) + line
        if needed <= max_bytes:
            digest = hashlib.sha256(body).hexdigest()
            return body + form.digest_line(digest).encode("utf-8"), shaped
    msg = (
        f"the report of {data['taskId']} needs {needed} bytes even at its last tier, over "
        f"{{max_bytes}} {max_bytes}; raise it"
    )
    raise ArgumentError(msg, "max_bytes")


def run(kernel: Kernel, values: dict[str, Any], *, cwd: str) -> Result:
    """`cortex case report`: the document on stdout, or written to a file (see the module)."""
    from cortex.kernel.views.report import gather, options

    asked = options(values)
    data = gather(
        kernel,
        values["task"],
        generated_at=values.get("generated_at"),
        full_audit=bool(values.get("full_audit")),
    )
    document, shaped = build(data, asked.format, asked.max_bytes)
    if len(document) > asked.max_bytes:  # the tiers guarantee it; this is the promise, checked
        msg = f"internal: the report is {len(document)} bytes, over {asked.max_bytes}"
        raise InvalidInputError(msg)
    body = document[: document.rstrip(b"\n").rfind(b"\n") + 1]
    answer: Data = {
        "taskId": data["taskId"],
        "format": asked.format,
        "comment": asked.comment,
        "maxBytes": asked.max_bytes,
        "bytes": len(document),
        "sha256": hashlib.sha256(body).hexdigest(),
        "fileSha256": hashlib.sha256(document).hexdigest(),
        "verdict": data["verdict"]["status"],
        "tier": shaped["tier"]["index"],
        "tierName": shaped["tier"]["name"],
        "omitted": shaped["tier"]["omitted"],
        "generatedAt": data["generatedAt"],
        "path": None,
        "warnings": [],
        "document": None,
    }
    if asked.output is None or asked.output == "-":
        answer["document"] = document.decode("utf-8", "surrogateescape")
        return Result(data=answer)
    from cortex.kernel.views.handoff.file import write_output

    target = os.path.join(cwd, os.path.expanduser(asked.output))
    written = write_output(kernel, data["taskId"], target, document)
    answer["path"] = written["path"]
    answer["warnings"] = written["warnings"]
    return Result(data=answer)


def text_of(data: Data) -> str:
    """The answer for a person, without rich (the launcher prints it; a report may be large).

    The document byte for byte, or where it was written; every other text with its hidden
    characters shown as tokens, so a path cannot carry a terminal escape.
    """
    if data.get("document") is not None:
        document: str = data["document"]
        return document
    from cortex.report.escape import visible

    head = (
        f"Wrote the report of {data['taskId']} to {data['path']} ({data['format']}, "
        f"{data['bytes']} of at most {data['maxBytes']} bytes; verdict {data['verdict']}; tier "
        f"{data['tier']}, {data['tierName']}; sha256 {data['sha256']})"
    )
    lines = [head]
    lines += [f"  left out: {entry['count']} {entry['what']}" for entry in data["omitted"]]
    lines += [f"warning: {warning}" for warning in data["warnings"]]
    return visible("\n".join(lines)) + "\n"
