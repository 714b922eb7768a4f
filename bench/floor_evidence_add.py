"""The floor for `cortex case evidence add`: the same I/O with only the stdlib and msgspec.

flock the case, read and decode case.json, encode one evidence record, append it with one
write to an O_APPEND descriptor, fsync, unlock, print a JSON answer. With `--protocol` it also
does what Cortex's commit protocol adds on top (hash chain, the audit line, the atomic
case.json rewrite with its two extra fsyncs), so the gap between the two floors is the price of
the protocol and the gap to the real command is the price of everything else.

Usage: python floor_evidence_add.py CASE_DIR CLAIM [--protocol]
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

if os.environ.get("BENCH_LEAN_MSGSPEC") == "1":
    # msgspec loaded as cortex's console script loads it (cortex/launch.py): without
    # typing_extensions, so the gap to the real command is cortex's own (docs/benchmarks.md).
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    import msgspec

    del sys.modules["typing_extensions"]
import msgspec


def main() -> None:
    case_dir, claim = sys.argv[1], sys.argv[2]
    protocol = "--protocol" in sys.argv
    lock = os.open(os.path.join(case_dir, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open(os.path.join(case_dir, "case.json"), "rb") as handle:
        case = msgspec.json.decode(handle.read())
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = {
        "id": "ev_" + os.urandom(13).hex()[:26].upper(),
        "timestamp": now,
        "kind": "observation",
        "source": {"tool": "agent", "uri": None, "actor": "cli", "origin": "agent"},
        "claim": claim,
        "confidence": "unknown",
        "sensitivity": "normal",
        "revision": case["revision"],
    }
    lines = {"evidence": msgspec.json.encode(record) + b"\n"}
    if protocol:
        from hashlib import sha256

        record["prev"] = sha256(b"previous line").hexdigest()
        lines["evidence"] = msgspec.json.encode(record) + b"\n"
        command = {"id": "cmd_x", "timestamp": now, "operation": "case.evidence.add"}
        lines["commands"] = msgspec.json.encode(command) + b"\n"
    for name, data in lines.items():
        fd = os.open(
            os.path.join(case_dir, f"{name}.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
    if protocol:
        case["revision"] += 1
        tmp = os.path.join(case_dir, ".tmp-floor")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, msgspec.json.format(msgspec.json.encode(case), indent=2))
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, os.path.join(case_dir, "case.json"))
        dfd = os.open(case_dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    sys.stdout.write(msgspec.json.encode({"ok": True, "data": record}).decode() + "\n")


if __name__ == "__main__":
    main()
