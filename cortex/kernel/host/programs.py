"""Where a configured command's program is, for the set-up commands and the trust prompt.

The answers live with the verifiers (`cortex.verifiers.programs`), which find the default
pytest's interpreter at run time the same way; this is the set-up layer's door to them.
"""

from __future__ import annotations

from cortex.verifiers.programs import diagnose, portable_python, project_python, resolve

__all__ = ["diagnose", "portable_python", "project_python", "resolve"]
