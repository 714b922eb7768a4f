"""The `cortex` command line: parse strictly, call the kernel, render one envelope or rich text.

- `parser`: the grammar (a declarative command table) and its strict parser; `completion` draws
  shell completion from the same table;
- `commands`: one small handler per command, turning parsed values into a kernel call;
- `render` (an envelope as text, only when output is not `--json`), with `render_handoff`,
  `render_recall`, `render_retention`, `render_stats` and `render_timeline`;
- `live`: the progress channel as a live status line, and `--follow`'s lines;
- `terminal` (whether a person is at it, and asking them) and `retention` (the confirmations of
  `case forget` and `case rm`).
"""
