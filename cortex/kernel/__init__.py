"""The kernel: the rules of a case and the use cases that apply them.

The map of this package:

- `kernel` (`Kernel`): workspace, configuration and store, resolved once per call from the
  directory and environment a face passes in; `config`, `stores` (stores kept outside the state
  root), `defaults` (every optional argument's default), `errors`, `envelope` and `surface`
  (what every face does around a use case: redaction, errors, exit statuses).
- Rules: `lifecycle` (phases and their gates), `lease` (the change lease and its fencing),
  `assessment` (the one judge of proof), `validate`, `grants` (approved commands), `live` (the
  workspace as it is now, for a case).
- Use cases that write: `open_case`, `evidence` (with `raw_input`), `plan`, `resolve`,
  `decisions`, `verify` (with `receipts`), `complete`, `close` (block and abort).
- `views/`: read-only use cases; they never open a transaction.
- `host/`: doctor, init, setup, trust and the configuration display; nothing above imports it.

Faces (the CLI, the MCP server, the studio) call these functions and render what they return; no
rule lives in a face. Nothing here reads the environment or touches the terminal: callers pass
the environment in. docs/design/architecture.md has the layers and the arrows between them.
"""
