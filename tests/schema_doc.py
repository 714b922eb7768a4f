"""docs/schema/: the JSON Schema of every command's envelope; `python tests/schema_doc.py --write`.

One file per CLI command, `<command>.json` (`case.verify.json`): the envelope `--json` prints,
with `data` constrained by the command's answer type (cortex/kernel/answers.py) and `actions`
as the CLI writes them. The MCP server publishes the same schemas as each tool's
`outputSchema`, with its actions as tool calls. tests/test_docs.py regenerates the directory and
fails on any difference, so the files cannot drift from the code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortex.cli.grammar import COMMANDS  # noqa: E402 - the checkout, not an installed copy
from cortex.kernel.answers import envelope_schema  # noqa: E402
from cortex.kernel.envelope import SCHEMA, CommandAction  # noqa: E402

DIRECTORY = ROOT / "docs" / "schema"
SKIPPED = {"serve"}
"""Commands that answer with no envelope (the server speaks the protocol)."""


def render() -> dict[str, str]:
    """File name -> text, for every command's envelope schema."""
    files: dict[str, str] = {}
    for cmd in COMMANDS:
        if cmd.name in SKIPPED:
            continue
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA}/{cmd.name}",
            **envelope_schema(cmd.name, CommandAction),
        }
        files[f"{cmd.name}.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return files


def main() -> None:
    """Write docs/schema/ (and remove files no command has any more)."""
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/schema_doc.py --write")
    DIRECTORY.mkdir(exist_ok=True)
    files = render()
    for stale in DIRECTORY.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        (DIRECTORY / name).write_text(text)


if __name__ == "__main__":
    main()
