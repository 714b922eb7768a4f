"""Lint and type checks run as part of the test suite, so CI cannot skip them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.process  # every test here starts Python processes


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_check() -> None:
    """ruff (select = ALL, reasons on every ignore) reports nothing."""
    proc = run("ruff", "check", "--quiet", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    """The code is formatted."""
    proc = run("ruff", "format", "--check", "--quiet", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict() -> None:
    """mypy --strict passes over the package, the tests and the benchmarks."""
    proc = run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
