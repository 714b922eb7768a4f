"""What `cortex case verify` prints without a terminal, frozen: tests/golden/verify.{txt,json}.

The progress channel (issue 20) must change nothing where nothing is live: piped output and
`--json` stay byte for byte what they were before it existed. The golden files were written by
the release before the channel (`python tests/verify_golden.py --write --root DIR`, DIR a
checkout of it); tests/test_progress.py builds the same case with this checkout and compares.
They were regenerated on purpose since: when receipts gained the git tree id (issue 14), the
JSON gained `tree`, `headTree` and the assessment's `currency`, and nothing else; when receipts
gained what failed by name (issue 13), each receipt and receipt view gained `failing` and
`failingTotal`, and nothing else; when status showed the contract a claim rests on (issue 29),
each receipt view gained `contract`; when receipts gained the digest of the verifier definition
that ran (issue 27), each receipt gained `verifierSha256`, and nothing else.

The case is built by real processes only, from a repository with fixed commit dates, so the
commit ids and digests are the same on every run; generated ids, times and durations are
normalized. The verifier names its interpreter `python` found on PATH (a link in the temporary
directory), never by its absolute path: that path is written into cortex.toml, so it would change
the tree id, the digest and the column widths from one machine to the next.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"

VERIFIER = (
    "import sys, time\n"
    "for n in range(3):\n"
    "    print('unit: step', n, flush=True)\n"
    "    print('unit: warning', n, file=sys.stderr, flush=True)\n"
    "    time.sleep(0.5)\n"
    "print('unit: 3 passed')\n"
)

_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _env(root: Path, tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CORTEX_STATE_DIR": str(tmp / "state"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Cortex Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Cortex Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PYTHONPATH": str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CORTEX_APPROVE_COMMANDS": "1",
        "CORTEX_ACTOR": "agent-1",
    }


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout


def _cortex(env: dict[str, str], cwd: Path, *args: str) -> str:
    return _run([sys.executable, "-m", "cortex", *args], env, cwd)


def normalized(text: str) -> str:
    """Ids become <1>, <2>, ... in order of first appearance; times, durations, paths fixed."""
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return names.setdefault(match.group(), f"<{len(names) + 1}>")

    text = _ULID.sub(name, text)
    text = _TIME.sub("<time>", text)
    text = re.sub(r"\b[0-9]+\.[0-9]+ s\b", "N s", text)
    # The plan holds its own ids and times, so its digest differs from run to run.
    text = re.sub(r'"planSha256":"[0-9a-f]{64}"', '"planSha256":"<plan>"', text)
    # A table pads its cells to the widest one, and a duration's digits vary: trailing blanks
    # carry nothing a reader sees.
    text = re.sub(r"[ \t]+$", "", text, flags=re.MULTILINE)
    return text.replace(sys.executable, "<python>")


def outputs(root: Path) -> dict[str, str]:
    """verify.txt (piped text) and verify.json (`--json`) for one fixed case, run with `root`."""
    import json

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = _env(root, tmp)
        repo = tmp / "repo"
        repo.mkdir()
        git = ["git", "-c", "init.defaultBranch=main"]
        _run([*git, "init", "-q"], env, repo)
        (repo / "app.py").write_text("print('hello')\n")
        argv = json.dumps(["python", "-c", VERIFIER])
        (repo / "cortex.toml").write_text(f"[verifiers.unit]\nargv = {argv}\n")
        _run([*git, "add", "-A"], env, repo)
        _run([*git, "commit", "-q", "-m", "initial"], env, repo)
        task = json.loads(_cortex(env, repo, "case", "open", "Fix the login", "--json"))["data"][
            "taskId"
        ]
        evidence = json.loads(
            _cortex(env, repo, "case", "evidence", "add", task, "--claim", "app.py", "--json")
        )["data"]["evidence"]["id"]
        _cortex(
            env, repo, "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows",
            "--support", f"1={evidence}", "--uncertainty", "none", "--file", "app.py",
            "--boundary-reason", "the bug lives here", "--verify", "command:unit", "--json",
        )  # fmt: skip
        began = json.loads(_cortex(env, repo, "case", "begin-change", task, "--json"))["data"]
        if began.get("leaseToken"):  # a release with lease tokens (issue 19): its holder's shell
            env["CORTEX_LEASE_TOKEN"] = began["leaseToken"]
        (repo / "app.py").write_text("print('fixed')\n")
        text = _cortex(env, repo, "case", "verify", task)
        (repo / "app.py").write_text("print('fixed again')\n")
        envelope = _cortex(env, repo, "case", "verify", task, "--json")
        return {
            "verify.txt": normalized(text.replace(str(tmp), "<tmp>")),
            "verify.json": normalized(envelope.replace(str(tmp), "<tmp>")),
        }


def main() -> None:
    """Write the golden files from the checkout at --root (the release before the change)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", required=True)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    for name, text in outputs(args.root.resolve()).items():
        (GOLDEN / name).write_text(text)


if __name__ == "__main__":
    main()
