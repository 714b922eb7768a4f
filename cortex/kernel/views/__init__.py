"""Read-only use cases: they read cases and the workspace, and never open a transaction.

- `status` (and the case list), `show`, `metrics`, `sessions` (and the overview), `attest`,
  `artifact` (raw previews), `audit`;
- `timeline/`: the ordered history, its cards, its index and the fast path over ordered ledgers;
- `handoff/`: the bounded transfer packet, its Markdown and the file it can be saved to;
- `markdown`: Markdown that untrusted text cannot restructure, for the documents views produce.

A view may write a file a person asked for outside the store (`handoff -o`), never a case.
"""
