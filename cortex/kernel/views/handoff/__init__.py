"""The handoff packet: `packet` (the use case), `read`, `markdown` and `file` (saving it)."""
