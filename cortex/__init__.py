"""Cortex: a durable, auditable case file for every task a coding agent takes on."""

from __future__ import annotations

__version__ = "0.1.0"
