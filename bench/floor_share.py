"""The floor for an incremental `cortex case share`: the same git plumbing, inputs precomputed.

What Cortex's share runs for one appended record, without any of Cortex's own work (reading the
case, projecting, checking, building trees): one `git cat-file --batch` request for the ref, one
`git hash-object -w --stdin-paths` for the new blobs, one `git mktree --batch` for the new
trees, `git commit-tree`, a compare-and-swap `git update-ref` and an unforced `git push`. It
imports msgspec, as every floor here does, so both sides pay the same interpreter start.

Usage: python floor_share.py REPO INPUTS REF OLD REMOTE
(INPUTS holds blobs/<n>, trees.txt for mktree --batch, message.txt; bench/share.py writes it.)
"""

from __future__ import annotations

import os
import subprocess
import sys

import msgspec


def git(repo: str, *args: str, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, check=True)
    return proc.stdout


def main() -> None:
    repo, inputs, ref, old, remote = sys.argv[1:6]
    batch = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    if batch.stdin is None or batch.stdout is None:
        raise SystemExit("git cat-file has no pipes")
    batch.stdin.write(ref.encode() + b"\n")
    batch.stdin.flush()
    header = batch.stdout.readline().split()
    batch.stdout.read(int(header[2]) + 1)
    batch.stdin.close()
    batch.wait()
    blobs = os.path.join(inputs, "blobs")
    paths = "".join(os.path.join(blobs, name) + "\n" for name in sorted(os.listdir(blobs)))
    if paths:
        git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths", stdin=paths.encode())
    with open(os.path.join(inputs, "trees.txt"), "rb") as handle:
        trees = git(repo, "mktree", "--batch", stdin=handle.read()).split()
    with open(os.path.join(inputs, "message.txt"), "rb") as handle:
        message = handle.read()
    commit = git(repo, "commit-tree", trees[-1].decode(), "-p", old, stdin=message).strip()
    git(repo, "update-ref", ref, commit.decode(), old)
    git(repo, "push", "--porcelain", remote, f"{ref}:{ref}")
    sys.stdout.write(msgspec.json.encode({"commit": commit.decode()}).decode() + "\n")


if __name__ == "__main__":
    main()
