"""Allow `python -m cortex`."""

from __future__ import annotations

from cortex.launch import entrypoint

raise SystemExit(entrypoint())
