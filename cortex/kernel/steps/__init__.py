"""The use cases that write a case's own record, step by step along its life.

- `open_case`: `case open` (or, with an idempotency key, the case a retry made);
- `evidence`: `evidence add`, `note` and `read-evidence`, with `raw_input` (the one raw output a
  record keeps, from whichever face gave it);
- `plan`: the planning gate; `resolve`: what became of a hypothesis;
- `complete`: finish a case on the strength of its proof, or say why not;
- `close`: `block`, `unblock` and `abort`.

Verification is `proof/`, a person's decisions are `human/`: these steps call them.
"""
