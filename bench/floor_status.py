"""The floor for `cortex case status --json`: read and decode case.json, print an envelope.

Only the stdlib and msgspec, no lock (status takes none), no validation.

Usage: python floor_status.py CASE_DIR
"""

from __future__ import annotations

import os
import sys

if os.environ.get("BENCH_LEAN_MSGSPEC") == "1":
    # msgspec loaded as cortex's console script loads it (cortex/launch.py): without
    # typing_extensions, so the gap to the real command is cortex's own (docs/benchmarks.md).
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    import msgspec

    del sys.modules["typing_extensions"]
import msgspec


def main() -> None:
    with open(os.path.join(sys.argv[1], "case.json"), "rb") as handle:
        case = msgspec.json.decode(handle.read())
    counts = {name: state["count"] for name, state in case["ledgers"].items()}
    envelope = {
        "schema": "cortex/v1",
        "ok": True,
        "command": "case.status",
        "data": {
            "taskId": case["id"],
            "goal": case["goal"],
            "revision": case["revision"],
            "counts": counts,
        },
        "error": None,
    }
    sys.stdout.write(msgspec.json.encode(envelope).decode() + "\n")


if __name__ == "__main__":
    main()
