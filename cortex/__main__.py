"""Allow `python -m cortex`."""

from __future__ import annotations

from cortex.cli.main import entrypoint

raise SystemExit(entrypoint())
