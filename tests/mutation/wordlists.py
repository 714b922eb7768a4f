"""Word-list mutation of cortex/cases/redact.py: drop one word at a time, run the tests.

mutmut mutates code inside functions; the word lists of redact.py are module-level values it
never touches. This script makes one mutant per word of each list (the word taken out of the
list's source), runs the tests mutmut runs (pyproject.toml, [tool.mutmut]) against it in a
scratch copy of the checkout, and reports which mutants the tests kill. A surviving word is
either equivalent (docs/testing.md says why) or a gap (a test should pin it).

    .venv/bin/python tests/mutation/wordlists.py [--list NAME]... [--jobs N] [--json FILE]

It takes minutes, like any mutation run: on demand, not in CI.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path("cortex/cases/redact.py")
LISTS = (
    "_TOKEN_TRIGGERS",
    "_ASSIGN_WORDS",
    "_ESCAPED_BREAKS",
    "_NOT_SECRET_BARE",
    "_STRONG_WORDS",
    "_COUNT_WORDS",
    "_ALL_TRIGGERS",
    "_HIDING_ESCAPES",
)
TIMEOUT = 900.0


@dataclass
class Mutant:
    """One word taken out of one list."""

    name: str
    list_name: str
    word: str
    start: int
    end: int
    status: str = "not run"
    seconds: float = 0.0


def words(source: str, wanted: tuple[str, ...]) -> list[Mutant]:
    """A mutant for every string constant that is an element of a listed collection."""
    tree = ast.parse(source)
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    found: list[Mutant] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        value = getattr(node, "value", None)
        if not names or names[0] not in wanted or value is None:
            continue
        for parent in ast.walk(value):
            if not isinstance(parent, ast.Tuple | ast.List | ast.Set):
                continue
            for element in parent.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    assert element.end_lineno is not None
                    assert element.end_col_offset is not None
                    start = offsets[element.lineno - 1] + element.col_offset
                    end = offsets[element.end_lineno - 1] + element.end_col_offset
                    index = sum(1 for m in found if m.list_name == names[0])
                    found.append(
                        Mutant(f"{names[0]}[{index}]", names[0], element.value, start, end)
                    )
    return found


def mutated(source: str, mutant: Mutant) -> str:
    """`source` without the mutant's word (and the comma after it)."""
    rest = source[mutant.end :]
    stripped = rest.lstrip()
    if stripped.startswith(","):
        rest = stripped[1:]
    out = source[: mutant.start] + rest
    ast.parse(out)  # a mutant must still be Python, or it would be "killed" by a syntax error
    return out


def copy_checkout(into: Path) -> None:
    """What the tests need of the checkout: the package, the tests, the project file."""
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "mutants")
    for name in ("cortex", "tests"):
        shutil.copytree(ROOT / name, into / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")


FIRST = [
    "tests/test_redact.py::TestEveryShapeTrigger",
    "tests/test_redact.py::TestEveryAssignWord",
    "tests/test_redact.py::TestNumbersUnderTokenKeys",
    "tests/test_secret_corpus.py::TestCorpus",
]
"""The tests written against these lists run first, so a killed mutant dies in seconds."""


def pytest_args() -> list[str]:
    """The tests mutmut runs, with its extra arguments, stopping at the first failure."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        config = tomllib.load(handle)["tool"]["mutmut"]
    selection = config["pytest_add_cli_args_test_selection"]
    return ["-x", "-q", *config["pytest_add_cli_args"], *FIRST, *selection]


def run(mutant: Mutant, source: str, where: Path) -> None:
    """Run the tests against one mutant in the scratch checkout `where`."""
    (where / TARGET).write_text(mutated(source, mutant))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # As under mutmut: fresh pattern caches, and fewer hypothesis examples (tests/conftest.py).
    env["MUTANT_UNDER_TEST"] = f"wordlists:{mutant.name}"
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *pytest_args()],
            cwd=where,
            env=env,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        mutant.status = "survived" if proc.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        mutant.status = "timeout"
    finally:
        mutant.seconds = round(time.monotonic() - started, 1)
        (where / TARGET).write_text(source)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="append", choices=LISTS, help="only these lists")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--json", type=Path, help="also write every result to this file")
    options = parser.parse_args()
    source = (ROOT / TARGET).read_text()
    mutants = words(source, tuple(options.list or LISTS))
    with tempfile.TemporaryDirectory(prefix="cortex-wordlists-") as scratch:
        places = [Path(scratch) / f"job{i}" for i in range(options.jobs)]
        for place in places:
            copy_checkout(place)
        free = list(places)

        def work(mutant: Mutant) -> Mutant:
            place = free.pop()
            try:
                run(mutant, source, place)
            finally:
                free.append(place)
            print(f"{mutant.status:9} {mutant.seconds:7.1f}s  {mutant.name} {mutant.word!r}")
            return mutant

        with ThreadPoolExecutor(options.jobs) as pool:
            list(pool.map(work, mutants))
    print()
    print("| list | words | killed | survived | score |")
    print("|---|---:|---:|---:|---:|")
    for name in dict.fromkeys(m.list_name for m in mutants):
        mine = [m for m in mutants if m.list_name == name]
        killed = sum(m.status in {"killed", "timeout"} for m in mine)
        survivors = ", ".join(repr(m.word) for m in mine if m.status == "survived")
        print(
            f"| {name} | {len(mine)} | {killed} | {len(mine) - killed} | "
            f"{100 * killed / len(mine):.0f}% |" + (f" survivors: {survivors}" if survivors else "")
        )
    if options.json:
        options.json.write_text(json.dumps([asdict(m) for m in mutants], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
