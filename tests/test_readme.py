"""README's examples work when pasted (issue 29: the first one under Commands used an unset
`$RUN_ID` and failed with exit 4).

The blocks under "## Commands" are run as written, in order, by bash in a copy of the bundled
example app set up as the README says (its `.venv` git-ignored), with this checkout's `cortex`
first on PATH; between the two blocks the code is fixed, as the prose says. Every command must
succeed, and the case must end complete on verified proof.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, base_env, git

pytestmark = pytest.mark.process  # its tests start cortex processes

README = (ROOT / "README.md").read_text()
QUICKSTART = (ROOT / "examples" / "quickstart.sh").read_text()


def commands_blocks() -> list[str]:
    """The bash blocks of the README's "## Commands" section, in order."""
    section = README.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", section, re.DOTALL)


def fixed_callback() -> str:
    """The quickstart's fix of the example app's bug."""
    return QUICKSTART.split("cat > src/auth/callback.py <<'PY'\n", 1)[1].split("\nPY\n", 1)[0]


def test_the_commands_section_runs_as_pasted(tmp_path: Path) -> None:
    blocks = commands_blocks()
    assert len(blocks) == 2, blocks
    env = base_env(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cortex = bin_dir / "cortex"
    cortex.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m cortex "$@"\n')
    cortex.chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    # The launcher's approval: the README's prose has a person run `cortex case trust` instead.
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    app = tmp_path / "checkout-app"
    shutil.copytree(ROOT / "examples" / "checkout-app", app)
    git(app, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    (app / ".gitignore").write_text(".venv\n")
    git(app, "add", "-A", env=env)
    git(app, "commit", "-q", "-m", "checkout app", env=env)
    (app / ".venv" / "bin").mkdir(parents=True)
    (app / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "fixed.py").write_text(fixed_callback() + "\n")
    script = "\n".join(
        [
            "set -eu",
            "trap 'echo \"FAILED: $BASH_COMMAND\" >&2' ERR",
            blocks[0],
            f"cp '{tmp_path / 'fixed.py'}' src/auth/callback.py",
            blocks[1],
        ]
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = subprocess.run(
        ["cortex", "case", "status", "@latest", "--json"],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert '"status":"complete"' in status.stdout, status.stdout
    assert '"status":"verified"' in status.stdout
    assert shutil.which("cortex", path=env["PATH"]) == str(cortex)
