"""Plugins for real: the example package installed with pip, then run by `cortex case verify`.

tests/test_verifiers.py fakes a plugin with a hand-written dist-info; here the example in
examples/verifier-plugin/ is built by its own backend (hatchling, from the dev extras) and
installed into a private directory, so what a plugin author copies is what is proven to work.
The installation is offline: no index, no dependencies, no build isolation.

tests/test_verifier_testing.py covers `cortex.verifiers.testing` itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT, Cli, Outcome, ready_to_verify, run_cortex
from verify_kit import raw_blob, receipts_by

pytestmark = pytest.mark.process  # every test here starts Python processes

EXAMPLE = ROOT / "examples" / "verifier-plugin"
KIND = "todo-free"


class Installed:
    """Where the example was installed, and what its metadata says."""

    def __init__(self, site: Path, source: Path) -> None:
        self.site = site
        self.source = source
        (self.dist,) = metadata.distributions(path=[str(site)])

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """A cortex process environment that finds the plugin (and this checkout first)."""
        return {**env, "PYTHONPATH": f"{self.site}{os.pathsep}{ROOT}"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The example, built and installed with pip into a directory of its own, once per module."""
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("hatchling is missing: it is in the dev extras (pip install '.[dev]')")
    work = tmp_path_factory.mktemp("plugin")
    # A copy, so the build can never leave anything in the checkout.
    source = work / "verifier-plugin"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", ".*cache"))
    site = work / "site"
    argv = [
        *(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
        # Offline and hermetic: no index, no user pip configuration, no download of the backend
        # (hatchling comes from this environment), and cortex itself is this checkout.
        *("--isolated", "--no-index", "--no-build-isolation", "--no-deps"),
        # Nothing written outside the temporary directory: no wheel cache, no bytecode.
        *("--no-cache-dir", "--no-compile", "--target", str(site), str(source)),
    ]
    proc = subprocess.run(
        argv,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return Installed(site, source)


def verify(installed: Installed, cli: Cli, task: str, *extra: str) -> Outcome:
    """`cortex case verify` as a real process that can see the installed plugin."""
    args = ["case", "verify", task, *extra, "--json"]
    done = run_cortex(args, installed.env(cli.env), cli.cwd)
    return Outcome(done.returncode, done.stdout.decode(), done.stderr.decode())


def test_the_installed_distribution_registers_the_kind(installed: Installed) -> None:
    (entry,) = [e for e in installed.dist.entry_points if e.group == "cortex.verifiers"]
    assert (entry.name, entry.value) == (KIND, "cortex_todo_free:TodoFreeVerifier")
    assert installed.dist.metadata["Name"] == "cortex-todo-free"
    assert (installed.site / "cortex_todo_free" / "__init__.py").is_file()


def test_doctor_finds_the_plugin_loadable(
    installed: Installed, repo: Path, env: dict[str, str]
) -> None:
    done = run_cortex(["doctor", "--json"], installed.env(env), repo)
    envelope = json.loads(done.stdout)
    found = {check["name"]: check for check in envelope["data"]["checks"]}["verifier plugins"]
    assert found["status"] == "ok", found
    assert KIND in found["detail"].removeprefix("loadable: ").split(", ")


def test_verify_records_a_passing_receipt_from_the_plugin(
    installed: Installed, cli: Cli, repo: Path
) -> None:
    task = ready_to_verify(cli, verify=(KIND,))
    (repo / "app.py").write_text("print('fixed')\n")
    out = verify(installed, cli, task)
    assert out.code == 0, out.stdout + out.stderr
    receipt = receipts_by(out.data)[KIND]
    assert receipt["purpose"] == "verifier_run"
    assert receipt["tool"] == KIND
    assert receipt["verifierVersion"] == installed.dist.version == "0.1.0"
    assert receipt["status"] == "passed"
    assert receipt["binding"] == "bound"
    assert receipt["claim"] == "todo-free: no TODO/FIXME marker in 1 changed file(s)"
    assert out.data["assessment"]["status"] == "verified"


def test_a_marker_fails_the_batch_with_the_plugin_finding_and_report(
    installed: Installed, cli: Cli, repo: Path
) -> None:
    task = ready_to_verify(cli, verify=(KIND,))
    (repo / "app.py").write_text("print('fixed')\n# FIXME: remove the debug print\n")
    claim = ["--claim", "clean=app.py has no marker", "--contract", f"clean={KIND}#app.py"]
    out = verify(installed, cli, task, *claim)
    assert out.code == 2, out.stdout + out.stderr  # recorded, and not verified
    receipts = receipts_by(out.data)
    run = receipts[KIND]
    assert (run["tool"], run["status"]) == (KIND, "failed")
    assert receipts["claim:clean"]["status"] == "failed"
    assert out.data["assessment"]["status"] == "failed"
    run_evidence, finding_id = run["evidence"]
    finding = cli("case", "read-evidence", task, finding_id).data["evidence"]
    assert finding["claim"] == "app.py still has TODO/FIXME markers at line(s) 2"
    assert finding["kind"] == "lint"
    assert finding["derivedFrom"] == [run_evidence]
    report = raw_blob(cli.env, task, run["artifact"])
    assert report == b"app.py:2: # FIXME: remove the debug print\n"


def test_a_bad_marker_is_refused_by_the_plugin_check(
    installed: Installed, cli: Cli, repo: Path
) -> None:
    task = ready_to_verify(cli, verify=(f"{KIND}:a.b",))
    (repo / "app.py").write_text("print('fixed')\n")
    out = verify(installed, cli, task)
    assert out.code == 4, out.stdout + out.stderr
    assert "the marker must be a word" in out.envelope["error"]["message"]


def test_the_examples_own_tests_pass_against_the_installed_copy(installed: Installed) -> None:
    """The example's suite, written against `cortex.verifiers.testing`, runs as its author would.

    From the copied project directory: its src/ is not on the path, so the import is the
    installed copy's.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=installed.source,
        env={**os.environ, **installed.env({}), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout
    assert " failed" not in proc.stdout
