"""A clean checkout of one commit, outside the repository, for the merge gate to run verifiers in.

`git clone --shared --no-checkout` borrows the repository's objects (nothing is copied, nothing
is written in the repository or its `.git`), and `git checkout --detach <commit>` lays out
exactly that commit's tree. Hooks are off (`core.hooksPath=/dev/null`), so checking out runs no
code of the branch under review; only the verifiers the gate chooses run there.
docs/design/report.md, "The merge gate".
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from cortex.cases.bounds import REVIEW_CHECKOUT_TIMEOUT
from cortex.cases.fsio import make_private_dirs
from cortex.workspace.git import GitNotRunError, run_git


class CheckoutError(Exception):
    """The commit could not be checked out (git failed, timed out, or is missing)."""


def clean_checkout(root: str, env: Mapping[str, str], commit: str, parent: str) -> str:
    """A new private directory under `parent` holding `commit`'s tree; the caller removes it."""
    make_private_dirs(parent)
    target = os.path.join(parent, f"{os.getpid()}-{os.urandom(6).hex()}")
    quiet = {**env, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    off = ["-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"]
    steps = [
        (
            "clone",
            ["git", *off, "clone", "--quiet", "--shared", "--no-checkout", "--", root, target],
        ),
        ("checkout", ["git", "-C", target, *off, "checkout", "--quiet", "--detach", commit, "--"]),
    ]
    try:
        for name, argv in steps:
            failure = _run(name, argv, parent, quiet)
            if failure is not None:
                remove(target)
                raise CheckoutError(failure)
    except GitNotRunError as exc:
        remove(target)
        raise CheckoutError(f"git could not check out {commit[:12]}: {exc}") from None
    return target


def _run(name: str, argv: list[str], cwd: str, env: Mapping[str, str]) -> str | None:
    """Run one git step; why it failed, or None."""
    proc = run_git(argv, cwd=cwd, env=env, timeout=REVIEW_CHECKOUT_TIMEOUT)
    if proc.returncode == 0:
        return None
    text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"git {name} failed: {text[-1] if text else 'no message'}"


def remove(path: str) -> None:
    """Delete a checkout made here (never follows a link out of it)."""
    shutil.rmtree(path, ignore_errors=True)
