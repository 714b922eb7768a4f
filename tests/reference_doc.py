"""docs/reference.md, generated from the command tables; `python tests/reference_doc.py --write`.

The page is the CLI grammar (cortex/cli/grammar.py) and the MCP tool table (cortex/mcp/tools.py)
written out: every command, tool, option, argument, default and exit status. tests/test_docs.py
regenerates it and fails on any difference, so the page cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortex.cases import errors  # noqa: E402 - the checkout, not an installed copy
from cortex.cli.grammar import COMMANDS, GLOBAL, Cmd, Opt  # noqa: E402
from cortex.mcp.schemas import input_schema  # noqa: E402
from cortex.mcp.tools import ALIASES, TOOLS, Tool  # noqa: E402

PAGE = ROOT / "docs" / "reference.md"

EXITS = [
    (0, "ok", "the command did what it was asked"),
    (1, errors.CortexError.code, "an unexpected failure (reported without a traceback)"),
    (2, "ok", "`case verify` recorded its batch, but the case is not verified by it"),
    (3, errors.NotFoundError.code, "a named case, record or file does not exist"),
    (4, errors.InvalidInputError.code, "bad input, or stored data that fails its checks"),
    (5, errors.RefusedError.code, "a gate or a policy refused; nothing was written"),
    (6, errors.RevisionConflictError.code, "a conflict or a busy lock; retry"),
    (130, "interrupted", "Ctrl-C; nothing was written (143 for SIGTERM during a verifier run)"),
]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _option(opt: Opt) -> str:
    name = f"`{opt.short}`, `{opt.name}`" if opt.short else f"`{opt.name}`"
    if opt.kind != "flag":
        name += f" `{opt.metavar}`"
    kind = {"flag": "flag", "repeat": "repeatable"}.get(
        opt.kind, "integer" if opt.integer else "text"
    )
    default = "" if opt.default is None or opt.kind != "value" else f"`{opt.default}`"
    required = "yes" if opt.required else ""
    return f"| {_cell(name)} | {kind} | {default} | {required} | {_cell(opt.help)} |"


def _command(cmd: Cmd) -> list[str]:
    required = len(cmd.positionals) - cmd.optional
    usage = " ".join(
        [
            "cortex",
            *cmd.words,
            *(f"<{n}>" if i < required else f"[<{n}>]" for i, (n, _) in enumerate(cmd.positionals)),
            *(["..."] if cmd.variadic else []),
        ]
    )
    tools = [tool.name for tool in TOOLS if tool.command == cmd.name]
    lines = [
        f"### `cortex {' '.join(cmd.words)}`",
        "",
        _cell(cmd.help) + ".",
        "",
        f"    {usage}",
        "",
    ]
    if tools:
        lines += [f"Over MCP: `{tools[0]}`.", ""]
    if cmd.positionals:
        lines += ["| argument | meaning |", "|---|---|"]
        lines += [f"| `<{n}>` | {_cell(h)} |" for n, h in cmd.positionals]
        lines.append("")
    if cmd.options:
        lines += ["| option | kind | default | required | meaning |", "|---|---|---|---|---|"]
        lines += [_option(opt) for opt in cmd.options]
        lines.append("")
    return lines


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}` object"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _tool(tool: Tool) -> list[str]:
    schema = input_schema(tool)
    required = set(schema.get("required", []))
    hints = [
        name
        for name, on in (
            ("read-only", tool.read_only),
            ("idempotent", tool.idempotent),
            ("destructive", tool.destructive),
        )
        if on
    ]
    lines = [
        f"### `{tool.name}`",
        "",
        _cell(tool.description),
        "",
        f"Runs `cortex {tool.command.replace('.', ' ')}`"
        + (f"; {', '.join(hints)}." if hints else "."),
        "",
    ]
    properties = schema.get("properties", {})
    if properties:
        lines += [
            "| argument | type | default | required | CLI | meaning |",
            "|---|---|---|---|---|---|",
        ]
        for name, prop in properties.items():
            default = (
                ""
                if "default" not in prop
                else f"`{msgspec.json.encode(prop['default']).decode()}`"
            )
            cli = ALIASES.get(name, name)
            lines.append(
                f"| `{name}` | {_type(prop)} | {default} | {'yes' if name in required else ''} "
                f"| `{cli}` | {_cell(prop.get('description', ''))} |"
            )
        lines.append("")
    return lines


def render() -> str:
    """The whole page."""
    lines = [
        "# Reference: every command and tool",
        "",
        "<!-- Generated by `python tests/reference_doc.py --write` from cortex/cli/grammar.py",
        "     and cortex/mcp/tools.py; tests/test_docs.py fails when it differs. Do not edit. -->",
        "",
        'Every command answers with one JSON envelope under `--json` (docs/usage.md, "Output',
        "contract\"), and over MCP every tool answers with the same envelope. The tool's `CLI`",
        "column names the option an argument stands for (docs/design/architecture.md).",
        "",
        "## Exit status",
        "",
        "| status | code | meaning |",
        "|---|---|---|",
        *(f"| {status} | `{code}` | {meaning} |" for status, code, meaning in EXITS),
        "",
        'A tool\'s result carries the same status in `_meta["cortex/exitStatus"]`.',
        "",
        "## Options of every command",
        "",
        "| option | kind | default | required | meaning |",
        "|---|---|---|---|---|",
        *(_option(opt) for opt in GLOBAL),
        "",
        "## Commands",
        "",
    ]
    for cmd in sorted(COMMANDS, key=lambda c: c.words):
        lines += _command(cmd)
    lines += ["## MCP tools", ""]
    for tool in sorted(TOOLS, key=lambda t: t.name):
        lines += _tool(tool)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(render())
    else:
        sys.stdout.write(render())
