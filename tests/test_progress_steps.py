"""Share, fetch, recall reindex and rebuild report their steps through the progress channel.

Issue 20 asks for every long operation, not only verify, to say where it is: one step per case
with its position and the total, told through the same channel (`cortex.kernel.progress`) that
the terminal's live line and MCP's notifications render. The in-process tests collect the
events a use case sends; the pseudo-terminal test reads what a person sees.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from share_kit import Machine, make_machine, make_remote
from terminal_kit import Screen, terminal_env

from cortex.kernel.kernel import Kernel
from cortex.kernel.progress import Event, Progress, describe


def events_of(machine: Machine, call: str, **kwargs: object) -> list[Event]:
    """Run one kernel use case on `machine` with a listening sink; the events it sent."""
    heard: list[Event] = []
    kernel = Kernel(str(machine.repo), machine.env, default_actor="agent-1")
    kernel.progress = Progress(heard.append)
    if call == "share":
        from cortex.kernel.share import Share, share

        share(kernel, Share(all_cases=True, **kwargs))  # type: ignore[arg-type]
    elif call == "fetch":
        from cortex.kernel.share import Fetch, fetch

        fetch(kernel, Fetch(all_cases=True, **kwargs))  # type: ignore[arg-type]
    elif call == "reindex":
        from cortex.kernel.recall import reindex

        reindex(kernel)
    else:
        from cortex.kernel.recall import rebuild

        rebuild(kernel)
    return heard


def steps(events: list[Event], name: str) -> list[tuple[str | None, int | None, int | None]]:
    return [(e.subject, e.index, e.count) for e in events if e.kind == "step" and e.step == name]


def three_cases(machine: Machine) -> list[str]:
    return [machine.ok("case", "open", f"Fix bug {n}")["taskId"] for n in range(3)]


def test_share_and_fetch_report_one_step_per_case(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a, b = make_machine(tmp_path, "a", remote), make_machine(tmp_path, "b", remote)
    tasks = three_cases(a)
    shared = events_of(a, "share")
    assert shared[0].kind == "begin"
    assert shared[0].operation == "case.share"
    assert shared[0].count == 3
    exported = steps(shared, "export")
    assert {s for s, _, _ in exported} == set(tasks)
    assert [(i, c) for _, i, c in exported] == [(1, 3), (2, 3), (3, 3)]
    assert steps(shared, "push") == [(None, None, 3)]
    assert shared[-1].kind == "end"

    fetched = events_of(b, "fetch")
    assert fetched[0].operation == "case.fetch"
    assert steps(fetched, "fetch") == [(None, None, None)]
    imported = steps(fetched, "import")
    assert {s for s, _, _ in imported} == set(tasks)
    assert [(i, c) for _, i, c in imported] == [(1, 3), (2, 3), (3, 3)]
    assert fetched[-1].kind == "end"
    # The MCP rendering of the same events names the case and its position.
    assert any("import 2 of 3" in describe(e) for e in fetched)


def test_reindex_and_rebuild_report_one_step_per_case(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    tasks = three_cases(a)
    built = events_of(a, "rebuild")
    assert built[0].operation == "recall.rebuild"
    read = steps(built, "read")
    assert {s for s, _, _ in read} >= set(tasks)
    assert [i for _, i, _ in read] == list(range(1, len(read) + 1))
    assert built[-1].kind == "end"
    a.ok("case", "note", tasks[0], "one more thing")
    again = events_of(a, "reindex")
    assert again[0].operation == "recall.reindex"
    assert again[-1].kind == "end"
    # Only what the index is behind on is gone through, each case once, counted.
    assert all(count == len(steps(again, "index")) for _, _, count in steps(again, "index"))


@pytest.mark.process
def test_share_at_a_terminal_shows_its_steps_and_a_pipe_does_not(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    three_cases(a)
    screen = Screen(["case", "share", "--all"], terminal_env(a.env), a.repo)
    assert screen.wait() == 0
    seen = screen.plain()
    assert "exporting case 1 of 3" in seen, seen
    assert "exporting case 3 of 3" in seen, seen
    assert "pushing to the remote" in seen, seen
    piped = a.cli("case", "share", "--all", human=True)
    assert piped.code == 0
    assert "exporting case" not in piped.stdout + piped.stderr
