"""What is proven, and how Cortex finds out (docs/design/verification.md).

- `verify`: one call, one batch of receipts bound to the code they ran on; `receipts` stages the
  batch's records; `follow` shows a run's output line by line, never more than its stored copy;
- `assessment`: the one function that decides what is proven; every surface calls it;
- `live`: the workspace as it is now, the one capture proof is judged against;
- `grants` (a person's approval of a command verifier) and `will_run` (what a command verifier
  will run here, and whether it may).
"""
