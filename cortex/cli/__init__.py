"""The `cortex` command line: parse strictly, call the kernel, render one envelope or rich text.

- `grammar`: the declarative table of every command; `parser`: its strict parser and `--help`;
  `completion` draws shell completion from the same table;
- `commands`: the one call (parsed values into a use case's input struct, `run_use_case`), the
  face's hooks (the lease token from the environment, terminal confirmations, `handoff -o`) and
  `completion`;
- `render` (an envelope as text, only when output is not `--json`), with `render_handoff`,
  `render_recall`, `render_retention`, `render_setup`, `render_share`, `render_stats` and
  `render_timeline`;
- `live`: the progress channel as a live status line, and `--follow`'s lines;
- `terminal` (whether a person is at it, and asking them) and `retention` (the confirmations of
  `case forget` and `case rm`).
"""
