"""The agent host's session with a workspace: what the hooks face needs of the kernel.

- `observe`: recording what the host saw the agent do, and reading it back
  (docs/design/activity.md), with `test_runs` (a test run recognised in a command line);
- `capture_card`: what the per-tool-call capture hook needs to know, where it is cheap;
- `workspace_cases`: the open cases of this very workspace (the brief, the stop gate, the card);
- `session_lease`: which host session took a case's change lease, kept on this machine.
"""
