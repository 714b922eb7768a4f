"""Talking to a remote or a bundle: push, fetch, list, bundles, and a pull request's trailers.

Pushes are never forced and name each ref (no glob); fetches land only in the tracking
namespace `refs/cortex-remotes/...`, negotiate from nothing but the same cases' tracking refs,
and never touch `remote.*.fetch`. docs/design/sharing.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from cortex.cases.bounds import SHARE_BUNDLE_MAX, SHARE_PR_CASES_MAX, SHARE_PR_COMMITS_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.share.errors import RemoteRefusedError, RemoteUnavailableError
from cortex.share.format import REF_PREFIX, ref, tracking, valid_task
from cortex.share.git import Git, message

PushStatus = Literal["ok", "uptodate", "behind", "refused"]
_REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_RACES = (
    "fetch first",
    "non-fast-forward",
    "failed to update ref",
    "failed to lock",
    "cannot lock",
    "incorrect old value",
    "stale info",
)
"""What a remote says when another push got to the ref first."""
_REFUSAL_HINTS = ("403", "denied", "permission", "read-only", "not allowed", "protected", "forbid")


class PushResult(NamedTuple):
    """What the remote said about one ref."""

    ref: str
    status: PushStatus
    reason: str


def check_remote(name: str) -> str:
    """A remote's name as git configures it (never a URL, never an option)."""
    if not _REMOTE_NAME.fullmatch(name) or ".." in name or "//" in name:
        msg = f"{name[:80]!r} is not the name of a configured remote (see `git remote`)"
        raise InvalidInputError(msg)
    return name


def _unavailable(remote: str, what: str, stderr: bytes) -> Exception:
    text = message(stderr)
    low = text.lower()
    if any(hint in low for hint in _REFUSAL_HINTS):
        return RemoteRefusedError(f"{remote} refused the {what}: {text}", [])
    return RemoteUnavailableError(f"the {what} with {remote} failed: {text}")


def push(git: Git, remote: str, refs: Sequence[str]) -> dict[str, PushResult]:
    """Push each ref to the same name, unforced; the remote's verdict per ref."""
    args = ["push", "--porcelain", "--no-follow-tags", "--recurse-submodules=no"]
    args += [remote, *(f"{r}:{r}" for r in refs)]
    proc = git.run(args, check=False)
    results: dict[str, PushResult] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or ":" not in fields[1]:
            continue
        flag, spec, summary = fields[0], fields[1], fields[2]
        name = spec.partition(":")[2]
        if name not in refs:
            continue
        if flag in (" ", "*", "+"):
            results[name] = PushResult(name, "ok", summary)
        elif flag == "=":
            results[name] = PushResult(name, "uptodate", summary)
        elif "[rejected]" in summary or any(race in summary for race in _RACES):
            # Behind, or beaten to the ref's lock by a concurrent push: fetch, merge, retry.
            results[name] = PushResult(name, "behind", summary)
        else:
            results[name] = PushResult(name, "refused", summary)
    missing = [r for r in refs if r not in results]
    if missing and proc.returncode != 0:
        raise _unavailable(remote, "push", proc.stderr)
    return results


def fetch(
    git: Git, remote: str, pairs: Sequence[tuple[str, str]], *, tips: Sequence[str] = ()
) -> list[str]:
    """Fetch `src` into `dst` for each pair (forced: `dst` mirrors the remote); the ones missing.

    Negotiation starts only from `tips` (the same cases' tracking refs): a case shares no object
    with code, so the code's refs would only lengthen it. A source the remote lacks is dropped
    and the rest fetched.
    """
    wanted = list(pairs)
    absent: list[str] = []
    while wanted:
        config = ["-c", "protocol.version=2"]
        negotiation: list[str] = []
        for tip in tips:
            negotiation += ["--negotiation-tip", tip]
        if not negotiation:
            config += ["-c", "fetch.negotiationAlgorithm=noop"]
        args = [*config, "fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance"]
        args += ["--no-recurse-submodules", "--quiet", *negotiation, remote]
        args += [f"+{src}:{dst}" for src, dst in wanted]
        proc = git.run(args, check=False)
        if proc.returncode == 0:
            return absent
        text = proc.stderr.decode("utf-8", "replace")
        found = re.search(r"couldn't find remote ref (\S+)", text)
        if found is None:
            raise _unavailable(remote, "fetch", proc.stderr)
        gone = found.group(1)
        absent.append(gone)
        remaining = [(s, d) for s, d in wanted if s != gone]
        if len(remaining) == len(wanted):
            raise _unavailable(remote, "fetch", proc.stderr)
        wanted = remaining
    return absent


def declined(
    remote: str, first: str, verdicts: Mapping[str, PushResult], refused: list[str]
) -> RemoteRefusedError:
    """The error of a push the remote declined (`first` is the first ref it declined)."""
    return RemoteRefusedError(
        f"{remote} declined {first} {verdicts[first].reason}: hosts that accept only branches "
        "and tags, and read-only tokens (a fork's pull request), cannot take case refs; "
        "hand the case over as a bundle instead",
        refused,
    )


def fetch_tracking(git: Git, remote: str, task_ids: Sequence[str]) -> None:
    """Fetch these cases of `remote` into their tracking refs (each from its known tip)."""
    pairs = [(ref(i), tracking(remote, i)) for i in task_ids]
    tips = existing(git, [d for _, d in pairs])
    fetch(git, remote, pairs, tips=tips)


def existing(git: Git, names: Sequence[str]) -> list[str]:
    """Which of these local refs exist (one process)."""
    if not names:
        return []
    proc = git.run(["for-each-ref", "--format=%(refname)", *names], check=False)
    present = set(proc.stdout.decode().split())
    return [n for n in names if n in present]


def list_cases(git: Git, remote: str) -> list[str]:
    """The task ids of every case ref the remote holds (names only, protocol v2 prefixes)."""
    args = ["-c", "protocol.version=2", "ls-remote", "--refs", remote, REF_PREFIX + "*"]
    proc = git.run(args, check=False)
    if proc.returncode != 0:
        raise _unavailable(remote, "listing", proc.stderr)
    ids: list[str] = []
    for line in proc.stdout.decode().splitlines():
        name = line.partition("\t")[2]
        task_id = name.removeprefix(REF_PREFIX)
        if name.startswith(REF_PREFIX) and valid_task(task_id):
            ids.append(task_id)
    return sorted(set(ids), reverse=True)


def pr_cases(git: Git, base: str, head: str) -> tuple[list[str], list[str]]:
    """The case ids `Cortex-Case:` trailers name in `base..head`, and the values refused."""
    span = f"{base}..{head}"
    count = int(git.out("rev-list", "--count", span) or "0")
    if count > SHARE_PR_COMMITS_MAX:
        msg = f"{span} has {count} commits, more than the {SHARE_PR_COMMITS_MAX} read for trailers"
        raise InvalidInputError(msg)
    fmt = "--format=%(trailers:key=Cortex-Case,valueonly,separator=%x00)%x01"
    out = git.run(["log", fmt, span]).stdout.decode("utf-8", "replace")
    ids: list[str] = []
    refused: list[str] = []
    for chunk in out.split("\x01"):
        for raw in chunk.replace("\n", "\0").split("\0"):
            value = raw.strip()
            if not value:
                continue
            if valid_task(value):
                if value not in ids:
                    ids.append(value)
            elif value not in refused:
                refused.append(value[:80])
    if len(ids) > SHARE_PR_CASES_MAX:
        msg = f"the pull request names {len(ids)} cases, more than {SHARE_PR_CASES_MAX}"
        raise InvalidInputError(msg)
    return ids, refused


def bundle_create(git: Git, path: str, refs: Sequence[str]) -> None:
    """Write a bundle of these refs (git writes it through a lock file: whole or absent)."""
    git.run(["bundle", "create", "--quiet", path, *refs])


def write_bundle(git: Git, target: str, refs: Sequence[str]) -> list[str]:
    """Write a bundle of these refs at `target`, verified before it takes the name; its heads."""
    temporary = f"{target}.cortex-{os.getpid()}.bundle"
    try:
        bundle_create(git, temporary, refs)
        heads = bundle_heads(git, temporary)
        os.replace(temporary, target)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
    return heads


def bundle_heads(git: Git, path: str) -> list[str]:
    """Verify a bundle (git's check, then the pack's own checksum) and list its case refs."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise InvalidInputError(f"the bundle cannot be read ({exc.strerror})") from None
    if size > SHARE_BUNDLE_MAX:
        raise InvalidInputError(f"the bundle is {size} bytes, over {SHARE_BUNDLE_MAX}")
    proc = git.run(["bundle", "verify", "--quiet", path], check=False)
    if proc.returncode != 0:
        raise IntegrityError(f"the bundle does not verify: {message(proc.stderr)}")
    _check_pack(path)
    out = git.run(["bundle", "list-heads", path]).stdout.decode()
    heads: list[str] = []
    for line in out.splitlines():
        _, _, name = line.partition(" ")
        if not name.startswith(REF_PREFIX) or not valid_task(name.removeprefix(REF_PREFIX)):
            msg = f"the bundle holds {name[:120]!r}, which is not a case ref; refusing it"
            raise IntegrityError(msg)
        heads.append(name)
    if not heads:
        raise IntegrityError("the bundle holds no case")
    return heads


def _check_pack(path: str) -> None:
    """The pack's trailing checksum covers all of it (git skips a pack it need not read)."""
    import hashlib

    with open(path, "rb") as handle:  # a file the caller named; bounded by SHARE_BUNDLE_MAX
        data = handle.read(SHARE_BUNDLE_MAX + 1)
    header_end = data.find(b"\n\n")
    if not data.startswith((b"# v2 git bundle\n", b"# v3 git bundle\n")) or header_end < 0:
        raise IntegrityError("the bundle's header is not git's")
    header = data[:header_end].decode("utf-8", "replace")
    algo = "sha256" if "@object-format=sha256" in header else "sha1"
    size = hashlib.new(algo).digest_size
    pack = data[header_end + 2 :]
    if len(pack) < 12 + size or not pack.startswith(b"PACK"):
        raise IntegrityError("the bundle's pack is not git's")
    if hashlib.new(algo, pack[:-size]).digest() != pack[-size:]:
        raise IntegrityError("the bundle's pack does not match its checksum (it was edited)")


def fingerprint(data: bytes) -> str:
    """A short digest for messages."""
    return sha256_hex(data)[:12]
