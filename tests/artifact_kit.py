"""Tree-artifact helpers shared by the raw-tree tests: add a directory, list what was kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Cli

TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"


def add_tree(cli: Cli, task: str, tree: Path, *extra: str) -> dict[str, Any]:
    out = cli("case", "evidence", "add", task, "--claim", "test reports", "--raw-dir", str(tree),
              *extra)  # fmt: skip
    assert out.code == 0, out.stdout
    evidence: dict[str, Any] = out.data["evidence"]
    return evidence


def listing(cli: Cli, task: str, ref: str) -> dict[str, Any]:
    out = cli("case", "read-artifact", task, ref)
    assert out.code == 0, out.stdout
    data: dict[str, Any] = out.data
    return data
