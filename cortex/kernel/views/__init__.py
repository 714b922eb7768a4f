"""Read-only use cases: they read cases and the workspace, and never open a transaction.

- `status` (and the case list), `show`, `metrics`, `sessions` (and the overview), `attest`,
  `artifact` (raw previews), `audit`;
- `timeline/`: the ordered history, its cards, its index and the fast path over ordered ledgers;
- `handoff/`: the bounded transfer packet, its Markdown and the file it can be saved to;
- `markdown`: Markdown that untrusted text cannot restructure, for the documents views produce;
- `recall` (`cortex recall`, reading the index across cases) and `labels` (what reviewers' views
  add to records they show);
- for an agent host: `brief` (its open cases, whether a stop may pass) and `claims` (the agent's
  claims against what its host saw it do);
- for review: `review` (is a branch's code the code its cases verified), `review_summary` (its
  Markdown for a CI job's summary), `gate` (what the merge gate checks beside the assessment),
  `reproduce` (required verifiers run again on the head), `report` (everything a reviewer's
  page holds) and `report_files` (what the page shows of the case's files: raw previews and the
  integrity section);
- for a commit: `trailer` (the `Cortex-Case:` trailers of the cases whose lease is active).

A view may write a file a person asked for outside the store (`handoff -o`), never a case.
"""
