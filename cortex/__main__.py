"""Allow `python -m cortex`."""

from __future__ import annotations

from cortex.main import entrypoint

raise SystemExit(entrypoint())
