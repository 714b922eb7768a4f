"""The MCP tool table: each tool's name, hints, and the arguments it publishes.

A tool runs the use case the kernel registers for its command (`cortex.kernel.inputs.REGISTRY`),
the same one the CLI runs, and answers with the same envelope (its `command` is the CLI's dotted
name), so the two surfaces cannot drift apart. A tool's arguments are its use case's input
struct, less what this face withholds (`WITHHELD`, `WITHHELD_BY_COMMAND`), plus `workspace`;
the schemas are generated from them. This module does not import the MCP SDK, so the table can
be checked without a server; the session's own state (the lease tokens it holds) is
`cortex.mcp.session`.

What is deliberately not a tool: answering a decision (a person's act; agents ask, people
answer), `case trust` (approving a command must happen at a terminal), and the set-up commands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from cortex.kernel.errors import InvalidInputError
from cortex.kernel.inputs import ALIASES, Input, use_case

if TYPE_CHECKING:
    from cortex.kernel.envelope import Result
    from cortex.kernel.kernel import Kernel
    from cortex.mcp.session import Leases

__all__ = ["ALIASES", "TOOLS", "Tool", "decode_args", "spelling"]

Workspace = Annotated[
    str | None,
    msgspec.Meta(
        description="run as if the server had started in this directory (relative to where it "
        "did), like the CLI's -C: it must exist and be readable"
    ),
]

WITHHELD: dict[str, str] = {
    "lease_token": "this server presents only the tokens its own begin_change was given",
}
"""Input fields no tool publishes, on every tool, and why: the server fills them itself."""

WITHHELD_BY_COMMAND: dict[tuple[str, str], str] = {
    ("case.evidence.add", "raw_file"): "a path or '-' for stdin; over MCP raw output is text",
    ("case.list", "archived"): "archived cases are for people; an agent lists the live ones",
    ("review", "reproduce"): "runs the base branch's commands: the person or CI job decides",
    ("review", "accept"): "the gate's policy is set by who runs it, never by the agent judged",
    ("review", "format"): "says how the CLI prints the verdict; over MCP it is data",
}
"""Input fields one tool does not publish (they keep their defaults), and why."""


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP tool: its name, the command (use case) it runs, and its published arguments."""

    name: str
    command: str
    description: str
    args: type[msgspec.Struct]
    """The arguments as decoded: the input's published fields and `workspace`."""
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def call(self, kernel: Kernel, arguments: Any, held: Leases) -> Result:
        """Run this tool's use case on its decoded `arguments` (`cortex.mcp.session.call`)."""
        from cortex.mcp.session import call

        return call(kernel, self.command, arguments, held)


def withheld(command: str, field: str) -> bool:
    """Whether the tool of `command` leaves the input field `field` out of its arguments."""
    return field in WITHHELD or (command, field) in WITHHELD_BY_COMMAND


@functools.cache
def arguments(command: str, title: str, doc: str) -> type[msgspec.Struct]:
    """A tool's argument struct: its input's published fields, then `workspace` (the CLI's -C).

    Named `title` with the docstring `doc`, which its JSON schema publishes as they are.
    """
    struct: type[Input] = use_case(command)[0]
    fields: list[tuple[str, Any, Any]] = []
    for info in msgspec.structs.fields(struct):
        if withheld(command, info.name):
            continue
        if info.default_factory is not msgspec.NODEFAULT:
            fields.append(
                (info.name, info.type, msgspec.field(default_factory=info.default_factory))
            )
        elif info.default is not msgspec.NODEFAULT:
            fields.append((info.name, info.type, info.default))
        else:
            fields.append((info.name, info.type))  # type: ignore[arg-type]
    fields.append(("workspace", Workspace, None))
    return msgspec.defstruct(
        title,
        fields,
        kw_only=True,
        forbid_unknown_fields=True,
        module=__name__,
        namespace={"__doc__": doc},
    )


def _tool(
    *,
    name: str,
    command: str,
    description: str,
    doc: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Tool:
    title = use_case(command)[0].__name__
    args = arguments(command, title, doc or f"Arguments of {name}.")
    return Tool(
        name=name,
        command=command,
        description=description,
        args=args,
        read_only=read_only,
        destructive=destructive,
        idempotent=idempotent,
    )


TOOLS: tuple[Tool, ...] = (
    _tool(
        name="cortex_open_task",
        command="case.open",
        description="Open a case for a task: its goal, mode, risk and acceptance criteria. "
        "Pass idempotency_key to make a retry return the same case.",
    ),
    _tool(
        name="cortex_status",
        command="case.status",
        description="Where a case stands: phase, plan, lease, verification and next actions.",
        doc="A case, by task id.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_record_evidence",
        command="case.evidence.add",
        description="Append one piece of evidence (with optional raw output) to the ledger.",
    ),
    _tool(
        name="cortex_note",
        command="case.note",
        description="Append a free-text note to a case.",
    ),
    _tool(
        name="cortex_plan",
        command="case.plan",
        description="Commit a plan: falsifiable hypotheses, the change boundary, the verifiers "
        "that must pass, and what is still uncertain. Re-planning needs a reason.",
    ),
    _tool(
        name="cortex_resolve",
        command="case.resolve",
        description="Confirm, challenge or reject a hypothesis, citing evidence.",
    ),
    _tool(
        name="cortex_begin_change",
        command="case.begin-change",
        description="Take the change lease (or renew your own) and start changing code.",
    ),
    _tool(
        name="cortex_verify",
        command="case.verify",
        description="Run the plan's verifiers once. Receipts are bound to the exact code state "
        "they ran on; a later edit makes them stale.",
    ),
    _tool(
        name="cortex_request_decision",
        command="case.decision.request",
        description="Ask a person a bounded question; the case waits for the answer. "
        "An identical pending question is not asked twice.",
        idempotent=True,
    ),
    _tool(
        name="cortex_complete",
        command="case.complete",
        description="Finish a verified case and write its summary (or say why it cannot be "
        "verified). Releases the change lease.",
    ),
    _tool(
        name="cortex_abort_task",
        command="case.abort",
        description="Abandon a case and release its lease. Terminal: the case cannot be resumed. "
        "Nothing is deleted.",
        destructive=True,
    ),
    _tool(
        name="cortex_block",
        command="case.block",
        description="Put a case that cannot go on now on hold and release its lease; "
        "cortex_unblock resumes it where it was. Nothing is deleted.",
        destructive=True,
    ),
    _tool(
        name="cortex_archive",
        doc="Arguments of cortex_archive and cortex_unarchive.",
        command="case.archive",
        description="Move a closed case out of listings and recall; nothing is deleted.",
        idempotent=True,
    ),
    _tool(
        name="cortex_unarchive",
        doc="Arguments of cortex_archive and cortex_unarchive.",
        command="case.unarchive",
        description="Bring an archived case back.",
        idempotent=True,
    ),
    _tool(
        name="cortex_read_evidence",
        command="case.read-evidence",
        description="One evidence record in full.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_read_artifact",
        command="case.read-artifact",
        description="A bounded, redacted preview of raw output that the case cites.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_timeline",
        command="case.timeline",
        description="The case's phases, evidence, commands, decisions and receipts in time "
        "order, filtered and paged, with exact totals.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_handoff",
        command="case.handoff",
        description="A bounded transfer packet for the next agent or a reviewer.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_list_tasks",
        command="case.list",
        description="Cases in this workspace's store, newest first, with an exact total.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_unblock",
        command="case.unblock",
        description="Return a blocked case to the phase it was blocked in, with the reason it "
        "can go on (recorded on the phase change).",
    ),
    _tool(
        name="cortex_recall",
        command="recall",
        description="Cards of what earlier cases learned (rejected and confirmed hypotheses, "
        "decisions with the options they turned down, outcomes, notable evidence), best match "
        "first, with labels for stale, moved, superseded or contested ones. Cards only; read "
        "a full record with cortex_recall_get. Pass budget to bound the tokens.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_recall_get",
        command="recall.get",
        description="The full records of named cards, all of them or none.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        name="cortex_review",
        command="review",
        description="Whether the code of a branch (base..head) is the code its cases verified: "
        "approve, needs_verification or request_changes, with each case's problems. Never runs "
        "a verifier; anything but approve is an error whose data holds the verdict.",
        read_only=True,
        idempotent=True,
    ),
)

BY_NAME = {tool.name: tool for tool in TOOLS}
BY_COMMAND = {tool.command: tool for tool in TOOLS}

# The same table as WITHHELD: a field withheld on every tool is named in a message by its reason
# (a refusal about the lease token says the server holds it). A new WITHHELD entry is spelled so.
UNSPOKEN: dict[str, str] = WITHHELD
"""Kernel arguments no tool takes, named in messages by what stands for them here."""


def spelling(tool: Tool) -> Callable[[str], str]:
    """How this tool's messages name an argument: by its own argument name."""
    fields = {field.name for field in msgspec.structs.fields(tool.args)}
    names = {**UNSPOKEN, **{ALIASES.get(field, field): field for field in fields}}

    def spell(argument: str) -> str:
        return names.get(argument, argument)

    return spell


_KINDS = {
    "int": "an integer",
    "str": "a string",
    "bool": "true or false",
    "array": "a list",
    "object": "an object",
    "float": "a number",
    "null": "null",
}


def _kind(text: str) -> str:
    return " or ".join(_KINDS.get(part.strip(), part.strip()) for part in text.split("|"))


def decode_args(tool: Tool, arguments: Mapping[str, Any] | None) -> Any:
    """The tool's arguments as its msgspec type; a mismatch is bad input (exit 4).

    JSON types are strict, on every tool: `"200"` is not the integer 200. The message names the
    argument and what it must be.
    """
    import re

    try:
        return msgspec.convert(dict(arguments or {}), type=tool.args)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = re.fullmatch(r"Expected `(.+?)`, got `(.+?)` - at `\$\.([A-Za-z_]+)(.*)`", text)
        if match is not None:
            wanted, got, name, where = match.groups()
            inside = f" (at {name}{where})" if where else ""
            wanted_text = _kind(wanted.replace("| null", "").replace("null |", ""))
            msg = f"{tool.name}: {name} must be {wanted_text}, not {_kind(got)}{inside}"
            raise InvalidInputError(msg) from None
        raise InvalidInputError(f"{tool.name}: {text}") from None
