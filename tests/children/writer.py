"""A cortex writer process for the concurrency tests.

Usage: writer.py MODE WRITER COUNT WORKDIR TASK

MODE "append": COUNT `evidence add` calls with claims "writer W seq N", in order.
MODE "rmw": COUNT read-modify-write attempts: read the revision with `status`, then
`note --expect-revision` it; conflicts (exit 6) are expected and counted.
Prints one JSON line: {"ok": successes, "conflicts": n, "other": [unexpected exit codes]}.
Runs the real CLI code path in-process, so each call pays no interpreter start-up.
With WRITER_GATE=PATH set, it writes PATH.WRITER once it is loaded and starts only when PATH
exists, so a test can start every kind of writer at the same moment.
"""

from __future__ import annotations

import io
import json
import os
import sys


def main() -> None:
    mode, writer, count, workdir, task = sys.argv[1:6]
    from cortex.main import main as cortex

    gate = os.environ.get("WRITER_GATE")
    if gate:
        import time

        with open(f"{gate}.{writer}", "w"):
            pass
        while not os.path.exists(gate):
            time.sleep(0.005)

    def run(*argv: str) -> tuple[int, dict[str, object]]:
        out = io.StringIO()
        code = cortex([*argv, "--json"], env=os.environ, cwd=workdir, stdout=out)
        return code, json.loads(out.getvalue())

    tally: dict[str, object] = {"ok": 0, "conflicts": 0, "other": []}
    for seq in range(int(count)):
        if mode == "append":
            code, _ = run("case", "evidence", "add", task, "--claim", f"writer {writer} seq {seq}")
        else:
            _, status = run("case", "status", task)
            revision = status["data"]["revision"]  # type: ignore[index]
            code, _ = run(
                "case", "note", task, f"rmw {writer} {seq}", "--expect-revision", str(revision)
            )
        if code == 0:
            tally["ok"] = int(tally["ok"]) + 1  # type: ignore[call-overload]
        elif code == 6:
            tally["conflicts"] = int(tally["conflicts"]) + 1  # type: ignore[call-overload]
        else:
            tally["other"].append(code)  # type: ignore[attr-defined]
    sys.stdout.write(json.dumps(tally) + "\n")


if __name__ == "__main__":
    main()
