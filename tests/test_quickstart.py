"""README's first command runs examples/quickstart.sh: it must pass, and say true things.

CI runs it after installing (`.ci/run`); here it runs against this checkout (a `cortex` that
starts `python -m cortex` with the source tree on PYTHONPATH), so a change that breaks the
walk-through fails the suite, not only CI. Issue 29: the quickstart printed a plan's JSON
under a "raw output" label, and set cortex.toml up with this machine's interpreter path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, base_env


def test_the_quickstart_passes_and_shows_only_the_raw_output_it_means(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    cortex = venv / "bin" / "cortex"
    cortex.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m cortex "$@"\n')
    cortex.chmod(0o755)
    env = base_env(tmp_path)
    env.pop("CORTEX_STATE_DIR")  # the quickstart sets its own, under its temporary directory
    env.update({"CORTEX": str(cortex), "TMPDIR": str(tmp_path), "KEEP": "1"})
    done = subprocess.run(
        ["bash", str(ROOT / "examples" / "quickstart.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    raw = out.split("-- its raw output, as stored", 1)[1].split("==", 1)[0]
    assert "Authorization: Bearer [REDACTED]" in raw
    assert '"hypotheses"' not in raw, raw  # the plan's JSON is not this record's raw output
    assert "verify exited 2" in out
    (work,) = [p for p in tmp_path.glob("cortex-quickstart.*") if p.is_dir()]
    toml = (work / "checkout-app" / "cortex.toml").read_text()
    assert ".venv/bin/python" in toml
    assert str(tmp_path) not in toml, toml
    assert "summary: " in out
    assert os.path.isfile(out.split("summary: ", 1)[1].split("\n", 1)[0])
