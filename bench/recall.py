"""Recall's costs, each against a floor measured in the same run (docs/benchmarks.md).

    python bench/recall.py [--cards 10000] [--cases 500] [--runs 21]

It makes a git repository and a state root with `--cases` real cases (opened through the
kernel), then an index of `--cards` synthetic cards spread over those cases, written the way
the kernel writes it (manifest rows matching each case.json, so the index is current). Then:

- **build**: writing the cards into a new index (rows, FTS5, manifest, decision history) against
  plain `sqlite3` inserting the same rows into the same tables with `executemany`;
- **recall**: `cortex recall QUERY --json` as a fresh process against `floor_recall.py`, which
  opens the same file with the standard library, runs the same query and prints the rows;
- **brief**: `cortex case open GOAL --json` against the same with `--no-recall`, both fresh
  processes, so the difference is what the brief adds;
- in process: one `recall` call and one brief, the index already open in a warm process.

Commands run in interleaved rounds; medians and p90s. The machine is shared and noisy: trust
ratios and differences taken in one run more than absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from recall_corpus import cards as corpus_cards  # noqa: E402

RAW = ["fix", "the", "login", "redirect", "t3"]
"""Common words: most of the corpus matches, so every match is scored (the worst case)."""
SELECTIVE = ["t1811", "t2716"]
"""Rare terms: a few dozen matches."""
GOAL = "Fix the login redirect"
"""Three of the corpus's common words: about 4,600 of the 10,000 cards match (the worst case)."""
SELECTIVE_GOAL = "Repair t1811 and t2716"
"""Two rare terms: a few dozen cards match."""


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process, from spawn to exit.

    CPU time (user + system, from the kernel's accounting of the child) is reported beside
    wall time: on a shared machine it moves far less with the other tenants' load.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    err = b""
    if proc.stderr is not None:
        err = proc.stderr.read()
        proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        msg = f"{argv} failed: {err.decode()[-2000:]}"
        raise SystemExit(msg)
    return elapsed * 1000, (usage.ru_utime + usage.ru_stime) * 1000


Samples = dict[str, list[tuple[float, float]]]


def rounds(commands: dict[str, list[str]], env: dict[str, str], cwd: Path, runs: int) -> Samples:
    samples: Samples = {name: [] for name in commands}
    for argv in commands.values():
        for _ in range(2):
            timed(argv, env, cwd)
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(timed(argv, env, cwd))
    return samples


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def table(samples: Samples, floor: str, title: str) -> list[str]:
    base = statistics.median(wall for wall, _ in samples[floor])
    base_cpu = statistics.median(cpu for _, cpu in samples[floor])
    lines = [f"### {title}", ""]
    base_min = min(wall for wall, _ in samples[floor])
    lines.append(
        "| command | median ms | p90 ms | ratio | min ms | min ratio | CPU ms | CPU ratio |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, values in samples.items():
        walls = [wall for wall, _ in values]
        cpus = [cpu for _, cpu in values]
        median, cpu, least = statistics.median(walls), statistics.median(cpus), min(walls)
        lines.append(
            f"| {name} | {median:.1f} | {p90(walls):.1f} | {median / base:.2f} "
            f"| {least:.1f} | {least / base_min:.2f} | {cpu:.1f} | {cpu / base_cpu:.2f} |"
        )
    return [*lines, ""]


def environment(base: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base / "home"),
        "CORTEX_STATE_DIR": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_CACHE_HOME": str(base / "cache"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "PYTHONPATH": str(ROOT),
        "CORTEX_ACTOR": "bench",
    }


def setup(base: Path, cases: int) -> tuple[dict[str, str], Path, Any, list[str]]:
    """A repository, `cases` real cases in its store, and a kernel there."""
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.steps.open_case import open_case

    env = environment(base)
    (base / "home").mkdir()
    repo = base / "repo"
    repo.mkdir()
    for argv in (
        ["git", "-c", "init.defaultBranch=main", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "--allow-empty", "-m", "initial"],
    ):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    kernel = Kernel(str(repo), env, default_actor="bench")
    tasks = [
        open_case(kernel, goal=f"bench case {n}", no_recall=True).data["taskId"]
        for n in range(cases)
    ]
    return env, repo, kernel, tasks


def spread(count: int, tasks: list[str], store_id: str) -> dict[str, list[Any]]:
    """`count` synthetic cards, assigned round-robin to the real cases, as their cards."""
    import msgspec

    by_task: dict[str, list[Any]] = {task: [] for task in tasks}
    for number, card in enumerate(corpus_cards(count, stores=1)):
        task = tasks[number % len(tasks)]
        by_task[task].append(
            msgspec.structs.replace(card, task_id=task, store=store_id, repository="repo")
        )
    return by_task


def build(kernel: Any, by_task: dict[str, list[Any]]) -> tuple[float, float]:
    """Write the cards into a new index the way the kernel does; (wall, CPU) seconds."""
    from cortex.kernel import recall as kernel_recall
    from cortex.recall.cards import Derived
    from cortex.recall.index import Index
    from cortex.recall.source import file_key

    path = kernel_recall.path(kernel)
    for suffix in ("", "-journal"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    ref = kernel_recall.store_ref(kernel, kernel.store)
    start, cpu = time.perf_counter(), time.process_time()
    index = Index.write(path)
    with index.transaction():
        for task, cards in by_task.items():
            index.put_case(
                ref.root,
                file_key(kernel.store, task) or "",
                task,
                revision=1,
                evidence_bytes=0,
                source="bench",
                derived=Derived(cards=cards, contests=[], closings=[]),
                full=True,
                workspace=kernel.workspace.root,
                cleared=True,
            )
        index.relate(ref.root)
        index.set_meta("built", kernel.now())
    index.close()
    return time.perf_counter() - start, time.process_time() - cpu


def bodies_terms(bodies: list[tuple[int, str, bytes]]) -> list[tuple[int, str]]:
    return [(rowid, terms) for rowid, terms, _ in bodies]


def floor_build(base: Path, by_task: dict[str, list[Any]], *, fts: bool) -> tuple[float, float]:
    """Plain sqlite3: the same rows into the same tables, one executemany; (wall, CPU) s."""
    import sqlite3

    from cortex.cases.records import encode
    from cortex.recall.cards import stored_terms
    from cortex.recall.index import _FTS, _SCHEMA

    path = base / f"floor-{fts}.sqlite"
    if path.exists():
        path.unlink()
    rows = []
    bodies: list[tuple[int, str, bytes]] = []
    rowid = 1
    for task, cards in by_task.items():
        for card in cards:
            terms, length = stored_terms(card)
            head = (rowid, card.id, "/s", card.store, card.repository, task, card.kind)
            rows.append((*head, card.status, card.created, "", "[]", length, "/w"))
            bodies.append((rowid, terms, encode(card)))
            rowid += 1
    start, cpu = time.perf_counter(), time.process_time()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("BEGIN")
    for statement in _SCHEMA:
        db.execute(statement)
    db.executemany("INSERT INTO cards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO bodies VALUES (?, ?, ?)", bodies)
    if fts:
        db.execute(_FTS)
        db.executemany("INSERT INTO cards_fts(rowid, terms) VALUES (?, ?)", bodies_terms(bodies))
    db.execute("COMMIT")
    db.close()
    return time.perf_counter() - start, time.process_time() - cpu


def in_process(kernel: Any, runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) ms of one recall call and one brief in a warm process."""
    from cortex.kernel.recall import brief
    from cortex.kernel.views.recall import recall

    found: dict[str, tuple[float, float]] = {}
    calls: dict[str, Callable[[], object]] = {
        "recall, raw query": lambda: recall(kernel, " ".join(RAW)),
        "recall, selective query": lambda: recall(kernel, " ".join(SELECTIVE)),
        "brief (goal: fix the login redirect)": lambda: brief(kernel, "task_x", GOAL),
        "brief (selective goal)": lambda: brief(kernel, "task_x", SELECTIVE_GOAL),
    }
    for name, call in calls.items():
        call()
        walls, cpus = [], []
        for _ in range(runs):
            start, cpu = time.perf_counter(), time.process_time()
            call()
            walls.append((time.perf_counter() - start) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        found[name] = (statistics.median(walls), statistics.median(cpus))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description="recall benchmarks")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cortex-recall-bench-") as name:
        base = Path(name)
        env, repo, kernel, tasks = setup(base, args.cases)
        from cortex.kernel import recall as kernel_recall

        by_task = spread(args.cards, tasks, kernel_recall.store_ref(kernel, kernel.store).id)
        builds = [build(kernel, by_task) for _ in range(5)]
        plain = [floor_build(base, by_task, fts=False) for _ in range(5)]
        plain_fts = [floor_build(base, by_task, fts=True) for _ in range(5)]
        index_path = kernel_recall.path(kernel)
        cortex = [PY, "-m", "cortex"]
        out = [
            f"Results: {args.cards} cards over {args.cases} cases; Python {sys.version.split()[0]}",
            "",
        ]
        out += ["### build the index", ""]
        out += ["| build | median s | ratio to plain inserts | CPU s | CPU ratio |"]
        out += ["|---|---:|---:|---:|---:|"]
        base_wall = statistics.median(w for w, _ in plain)
        base_cpu = statistics.median(c for _, c in plain)
        for label, values in (
            ("plain sqlite3: rows only", plain),
            ("plain sqlite3: rows and FTS5", plain_fts),
            ("cortex index (rows, FTS5, manifest, history)", builds),
        ):
            wall = statistics.median(w for w, _ in values)
            cpu = statistics.median(c for _, c in values)
            out.append(
                f"| {label} | {wall:.3f} | {wall / base_wall:.2f} | {cpu:.3f} | "
                f"{cpu / base_cpu:.2f} |"
            )
        out.append("")
        floor = [PY, str(HERE / "floor_recall.py"), index_path]
        recall_runs = rounds(
            {
                "floor: sqlite3, raw query": [*floor, *RAW],
                "cortex recall --json, raw query": [*cortex, "recall", " ".join(RAW), "--json"],
                "floor: sqlite3, selective query": [*floor, *SELECTIVE],
                "context: python -c pass": [PY, "-c", "pass"],
                "context: python -c 'import msgspec, sqlite3'": [
                    PY,
                    "-c",
                    "import msgspec, sqlite3",
                ],
                # msgspec as cortex's console script loads it (cortex/launch.py).
                "context: the same, msgspec without typing_extensions": [
                    PY,
                    "-c",
                    "import sys; sys.modules['typing_extensions'] = None; import msgspec, sqlite3",
                ],
                "cortex recall --json, selective query": [
                    *cortex,
                    "recall",
                    " ".join(SELECTIVE),
                    "--json",
                ],
            },
            env,
            repo,
            args.runs,
        )
        raw = {k: v for k, v in recall_runs.items() if "raw" in k}
        selective = {k: v for k, v in recall_runs.items() if "raw" not in k}
        out += table(raw, "floor: sqlite3, raw query", "recall in a fresh process, raw query")
        out += table(
            selective,
            "floor: sqlite3, selective query",
            "recall in a fresh process, selective query",
        )
        opening = [*cortex, "case", "open", GOAL, "--json"]
        opens = rounds(
            {
                "case open --no-recall": [*opening, "--no-recall"],
                "case open (with the brief)": opening,
                "case open (brief of a selective goal)": [
                    *cortex,
                    "case",
                    "open",
                    SELECTIVE_GOAL,
                    "--json",
                ],
            },
            env,
            repo,
            args.runs,
        )
        out += table(opens, "case open --no-recall", "the brief at case open")
        with_brief, without = opens["case open (with the brief)"], opens["case open --no-recall"]
        added = statistics.median(w for w, _ in with_brief) - statistics.median(
            w for w, _ in without
        )
        added_cpu = statistics.median(c for _, c in with_brief) - statistics.median(
            c for _, c in without
        )
        least = min(w for w, _ in with_brief) - min(w for w, _ in without)
        said = f"The brief adds {added:.1f} ms of wall time and {added_cpu:.1f} ms of CPU time"
        out += [said + f" (median against median); {least:.1f} ms minimum against minimum.", ""]
        out += ["### in a warm process", "", "| call | median ms | CPU ms |", "|---|---:|---:|"]
        out += [
            f"| {k} | {wall:.2f} | {cpu:.2f} |"
            for k, (wall, cpu) in in_process(kernel, args.runs).items()
        ]
        # Last, as it replaces the synthetic cards: what reading the case files costs.
        from cortex.kernel.recall import rebuild

        start, cpu = time.perf_counter(), time.process_time()
        rebuild(kernel)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        rebuilt = f"`recall rebuild` from the case files of the {args.cases} cases (each opened, "
        rebuilt += f"no cards): {wall:.2f} s wall, {cpu:.2f} s CPU."
        out += ["", rebuilt]
        print("\n".join(out))


if __name__ == "__main__":
    main()
