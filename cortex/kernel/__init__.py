"""The kernel: the rules of a case and the use cases that apply them.

The map of this package. Flat, because every call loads them (or they are shared by all):

- `kernel` (`Kernel`): workspace, configuration and store, resolved once per call from the
  directory and environment a face passes in; `config`, `stores` (stores kept outside the state
  root), `inputs` (what use cases take: the shared input shapes, every optional argument's
  default, the registry of command -> input struct and function), `errors`, `envelope` (the
  output contract, and `Data`, a JSON object) and `answers` (each command's `data`, the
  published schemas), `surface` (what every face does around a use case: redaction, errors,
  exit statuses), `progress` (the one progress channel a long use case reports to).
- Rules every use case applies: `lifecycle` (phases and their gates), `lease` (the change lease
  and its fencing), `host_session` (the agent host's session a call belongs to), `validate`,
  `refs` (ids as people type them), `provenance` (whether an origin was a person's word).
- The kernel's side of its neighbours: `recall` (keeping the index current, asking it) and
  `share` (`case share`, `fetch`, `bundle`).

Grouped by what they do:

- `steps/`: the use cases that write a case's own record: open, evidence and notes, plan,
  resolve, complete, block and abort.
- `proof/`: what is proven and how it is found out: `verify`, its receipts, the one assessment,
  the live capture, command approval (`grants`, `will_run`) and `--follow`.
- `human/`: what only a person settles: decisions, contests, the unattended opt-in.
- `retention/`: bounding what a store keeps: archive, prune, remove a case, forget a record.
- `activity/`: the agent host's session with a workspace, for the hooks face: what the host saw
  the agent do, the capture card, test runs, the workspace's open cases, the session's lease.
- `views/`: read-only use cases; they never open a transaction.
- `host/`: doctor, init, setup, trust and the configuration display; nothing above imports it.

Faces (the CLI, the MCP server, the studio, the hooks) call these functions and render what they
return; no rule lives in a face. Nothing here reads the environment or touches the terminal:
callers pass the environment in. docs/design/architecture.md has the layers and the arrows
between them.
"""
