"""What only a person settles (docs/design/trust.md, "Answers need a person present").

- `decisions`: `decision request`, `answer` and `list`;
- `contests`: `decision resolve`, a person settling the contests of an answered decision;
- `unattended`: the per-machine opt-in for automation a person configured to answer.
"""
