"""The agent host's face: `cortex hook EVENT` answers Claude Code's and Codex's hooks.

The host runs the command with the event's JSON payload on stdin; this face maps it to kernel
use cases and answers in the host's format (docs/design/hosts.md). It never breaks the host's
turn: every failure is silence plus a line in `hooks.log` that `doctor` reports.

- `entry`: the command line, the payload, the deadline, failing open, the answer's format.
- `events`: one function per event (the brief, the stop gate, compaction, lease renewal).
- `text`: the brief and the stop reason as the model reads them, within their budgets.
- `capture`: the hooks on every tool call, standard library only; `record` is its detached
  child, which reads the payload into one observation for the kernel.
"""
