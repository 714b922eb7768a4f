"""What the agent host's hooks cost, against `case status --json` on the same case.

PostToolUse runs on every tool call: it is timed against `python -c pass`, both as the host
waits for it and until its detached writer has the record on disk.

SessionStart (the brief) and Stop (the gate) read about what `status` reads: the cases, one
capture of the workspace, the assessment. Both are timed beside `cortex case status TASK --json`
in interleaved rounds, on the bench's 100-file repository and on a 50,000-file tree, for a case
whose proof is stale (an edit after the verify: the gate blocks and names the changed files,
the most work either hook does). Each command runs as a whole process, its payload on stdin.

Run it with a regular (not editable) install, as README.md says:

    .venv/bin/python bench/hooks.py [--runs 20] [--files 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import make_repo  # noqa: E402 - the sibling scripts, not a package
from verify import fast_import  # noqa: E402

PY = sys.executable
CORTEX = str(Path(PY).parent / "cortex")
SESSION = "be4c0000-0000-4000-8000-00000000b001"

SPAWNER = """
import json, os, sys, time
commands, runs, cwd = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.chdir(cwd)
null = os.open(os.devnull, os.O_WRONLY)
results = {name: [] for name in commands}
for round_ in range(runs + 2):  # two warm-up rounds: page cache, bytecode
    for name, (argv, stdin) in commands.items():
        actions = [(os.POSIX_SPAWN_DUP2, null, 1)]
        if stdin is not None:
            fd = os.open(stdin, os.O_RDONLY)
            actions.append((os.POSIX_SPAWN_DUP2, fd, 0))
        start = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=actions)
        _, status, _ = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
        if stdin is not None:
            os.close(fd)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{argv} failed")
        if round_ > 1:
            results[name].append(elapsed * 1000)
print(json.dumps(results))
"""


def cortex(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    proc = subprocess.run(
        [CORTEX, *args, "--json"], env=env, cwd=cwd, capture_output=True, check=False
    )
    envelope: dict[str, object] = json.loads(proc.stdout)
    if not envelope["ok"]:
        raise SystemExit(f"cortex {' '.join(args)} failed: {envelope['error']}")
    data: dict[str, object] = envelope["data"]  # type: ignore[assignment]
    return data


def stale_case(repo: Path, env: dict[str, str], first: str, second: str) -> str:
    """A change case verified once, then edited: its proof is stale and the gate blocks."""
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "add", "cortex.toml"], cwd=repo, env=env, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "verifier"], cwd=repo, env=env, check=True)
    task = str(cortex(["case", "open", "Bench the hooks", "--mode", "change"], env, repo)["taskId"])
    evidence = cortex(["case", "evidence", "add", task, "--claim", "a bench claim"], env, repo)
    support = evidence["evidence"]["id"]  # type: ignore[index]
    plan = ["case", "plan", task, "--hypothesis", "h :: d", "--support", f"1={support}"]
    plan += ["--uncertainty", "none", "--verify", "command:unit", "--file", first, "--file", second]
    cortex([*plan, "--boundary-reason", "bench"], env, repo)
    cortex(["case", "begin-change", task], env, repo)
    with (repo / first).open("a") as handle:
        handle.write("# changed\n")
    cortex(["case", "verify", task], env, repo)
    with (repo / second).open("a") as handle:
        handle.write("# changed after the verify\n")
    return task


def measure(
    repo: Path, task: str, env: dict[str, str], runs: int, scratch: Path
) -> dict[str, list[float]]:
    payloads = {}
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("Stop", {"stop_hook_active": False}),
    ):
        path = scratch / f"{repo.name}-{event}.json"
        body = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": event, **extra}
        path.write_text(json.dumps(body))
        payloads[event] = str(path)
    commands = {
        "cortex case status TASK --json": ([CORTEX, "case", "status", task, "--json"], None),
        "cortex hook SessionStart": ([CORTEX, "hook", "SessionStart"], payloads["SessionStart"]),
        "cortex hook Stop (blocks: stale proof)": ([CORTEX, "hook", "Stop"], payloads["Stop"]),
    }
    out = subprocess.run(
        [PY, "-S", "-c", SPAWNER, json.dumps(commands), str(runs), str(repo)],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    results: dict[str, list[float]] = json.loads(out.stdout)
    return results


POST = """
import json, os, sys, time, fcntl
argv, payload, lock = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
runs, cwd = int(sys.argv[4]), sys.argv[5]
os.chdir(cwd)
null = os.open(os.devnull, os.O_WRONLY)
floor = [sys.executable, "-c", "pass"]
out = {"python -c pass": [], "cortex hook PostToolUse (the host waits)": [],
       "... until the record is on disk": []}
for round_ in range(runs + 2):
    start = time.perf_counter()
    quiet = [(os.POSIX_SPAWN_DUP2, null, 1)]
    pid = os.posix_spawnp(floor[0], floor, dict(os.environ), file_actions=quiet)
    os.wait4(pid, 0)
    base = time.perf_counter() - start
    fd = os.open(payload, os.O_RDONLY)
    start = time.perf_counter()
    feed = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, fd, 0)]
    pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=feed)
    os.wait4(pid, 0)
    waited = time.perf_counter() - start
    held = os.open(lock, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_SH)  # the detached writer holds it until its record is synced
    landed = time.perf_counter() - start
    os.close(held)
    os.close(fd)
    if round_ > 1:
        out["python -c pass"].append(base * 1000)
        out["cortex hook PostToolUse (the host waits)"].append(waited * 1000)
        out["... until the record is on disk"].append(landed * 1000)
print(json.dumps(out))
"""


def capture(repo: Path, task: str, env: dict[str, str], runs: int, scratch: Path) -> list[str]:
    """PostToolUse on a Bash call while the case is changing, against `python -c pass`."""
    status = cortex(["case", "status", task], env, repo)
    case_dir = Path(str(status["store"]["root"])) / task  # type: ignore[index]
    cortex(["case", "begin-change", task], env, repo)  # back to changing: capture is on
    body = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": "python -m pytest -q"},
            "tool_response": {"stdout": "3 passed in 0.12s", "stderr": ""},
            "duration_ms": 120}  # fmt: skip
    payload = scratch / "post.json"
    payload.write_text(json.dumps(body))
    argv = [CORTEX, "hook", "PostToolUse"]
    out = subprocess.run(
        [PY, "-S", "-c", POST, json.dumps(argv), str(payload), str(case_dir / "activity.lock"),
         str(runs), str(repo)],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    samples: dict[str, list[float]] = json.loads(out.stdout)
    floor = statistics.median(samples["python -c pass"])
    lines = ["### PostToolUse on the 100-file repository (a Bash call, a case changing)", "",
             "| command | median ms | p90 ms | ratio to python -c pass |",
             "|---|---:|---:|---:|"]  # fmt: skip
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        lines.append(f"| {name} | {median:.1f} | {p90:.1f} | {median / floor:.2f} |")
    return [*lines, ""]


def table(title: str, samples: dict[str, list[float]]) -> list[str]:
    floor = statistics.median(samples["cortex case status TASK --json"])
    lines = [f"### {title}", "", "| command | median ms | p90 ms | ratio to status |",
             "|---|---:|---:|---:|"]  # fmt: skip
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        lines.append(f"| {name} | {median:.1f} | {p90:.1f} | {median / floor:.2f} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=50_000)
    options = parser.parse_args()
    if not Path(CORTEX).exists():
        raise SystemExit(f"no cortex console script next to {PY}; install the project first")
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cortex-bench-hooks-") as scratch_dir:
        scratch = Path(scratch_dir)
        env = {
            "PATH": os.environ["PATH"], "HOME": str(scratch), "LANG": "C.UTF-8",
            "CORTEX_STATE_DIR": str(scratch / "state"), "CORTEX_APPROVE_COMMANDS": "1",
            "CLAUDE_CODE_SESSION_ID": SESSION, "GIT_CONFIG_NOSYSTEM": "1",
        }  # fmt: skip
        small = make_repo(scratch, env)
        task = stale_case(small, env, "pkg0/module_0.py", "pkg1/module_1.py")
        samples = measure(small, task, env, options.runs, scratch)
        out += table("hooks on the 100-file repository", samples)
        out += capture(small, task, env, options.runs * 2, scratch)
        big = scratch / "big-repo"
        paths = fast_import(big, options.files, env)
        task = stale_case(big, env, paths[0], paths[-1])
        samples = measure(big, task, env, options.runs, scratch)
        out += table(f"hooks on a {options.files:,}-file tree", samples)
    print("\n".join(out))


if __name__ == "__main__":
    main()
