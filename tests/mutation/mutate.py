"""Run mutmut on one module, against the tests that matter for it, in a scratch checkout.

mutmut reads its settings from `[tool.mutmut]` of the project file in the directory it runs in,
and keeps its results in `mutants/` there: one configuration, one module. So each module gets a
scratch copy of the checkout (the files git tracks or would track) whose project file holds that
module's settings, from `[tool.cortex.mutation.<module>]` of pyproject.toml:

    mutate     the file mutmut mutates
    tests      the tests each mutant runs against (the ones that reach the module in-process)
    args       more pytest arguments (deselections)
    wider      the wider set survivors are re-run against in place (tests/mutation/survivors.py)
    functions  optional: mutant-name globs, when only some functions of the file are meant
    settings   optional: more [tool.mutmut] settings (`timeout_multiplier = 3`: a mutant that
               loops is stopped sooner)

    .venv/bin/python tests/mutation/mutate.py MODULE [--max-children N] [--sample K] [--seed S]
    .venv/bin/python tests/mutation/mutate.py MODULE --score          # counts from the last runs
    .venv/bin/python tests/mutation/mutate.py MODULE --only GLOB...    # (re-)run these mutants

The scratch copy lives under the temporary directory (`--dir` elsewhere) and is kept, so runs
resume and `mutmut results`, `show` and `apply` work there. The checkout itself is never
written. Like the benchmarks, this runs on demand, never in CI (docs/testing.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTMUT = str(Path(sys.executable).parent / "mutmut")
KILLED = {1, 3}
TIMEOUT = {36, -24, 24, 152, 255}
NO_TESTS = {5, 33}


@dataclass
class Module:
    """One module's mutation settings (`[tool.cortex.mutation.<name>]`)."""

    name: str
    mutate: str
    tests: list[str]
    args: list[str] = field(default_factory=list)
    wider: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    settings: dict[str, object] = field(default_factory=dict)

    @property
    def dotted(self) -> str:
        """The module's import name, which starts each of its mutants' names."""
        return self.mutate.removesuffix(".py").replace("/", ".")


def modules(root: Path = ROOT) -> dict[str, Module]:
    """Every module pyproject.toml configures for mutation."""
    with (root / "pyproject.toml").open("rb") as handle:
        tables = tomllib.load(handle)["tool"]["cortex"]["mutation"]
    return {name: Module(name=name, **table) for name, table in tables.items()}


def scratch_dir(module: Module) -> Path:
    """Where the module's scratch checkout is kept by default."""
    return Path(tempfile.gettempdir()) / "cortex-mutation" / f"{ROOT.name}-{module.name}"


def _toml(value: object) -> str:
    # Strings, numbers and lists of strings only: JSON's quoting is TOML's basic string.
    return json.dumps(value)


def mutmut_table(module: Module) -> str:
    """The `[tool.mutmut]` table the scratch checkout's project file gets."""
    lines = [
        "[tool.mutmut]",
        'source_paths = ["cortex"]',
        f"only_mutate = {_toml([module.mutate])}",
        f"pytest_add_cli_args_test_selection = {_toml(module.tests)}",
        f"pytest_add_cli_args = {_toml(['-p', 'no:cacheprovider', *module.args])}",
    ]
    lines += [f"{key} = {_toml(value)}" for key, value in module.settings.items()]
    return "\n".join(lines) + "\n"


def _tracked(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode().split("\0") if name and (root / name).is_file()]


def prepare(module: Module, where: Path) -> None:
    """Bring the scratch checkout `where` up to date with the checkout, with module's settings."""
    where.mkdir(parents=True, exist_ok=True)
    wanted = set(_tracked(ROOT))
    for name in sorted(wanted):
        source, target = ROOT / name, where / name
        if target.is_file() and target.read_bytes() == source.read_bytes():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)  # the source's mtime: mutmut regenerates what changed
    for top in ("cortex", "tests"):
        for path in (where / top).rglob("*"):
            relative = path.relative_to(where).as_posix()
            if path.is_file() and "__pycache__" not in relative and relative not in wanted:
                path.unlink()
    text = (ROOT / "pyproject.toml").read_text()
    text, count = re.subn(
        r"^\[tool\.mutmut\]\n(?:(?!\[).*\n|\n)*", mutmut_table(module), text, flags=re.MULTILINE
    )
    if count != 1:
        msg = "pyproject.toml has no [tool.mutmut] table to replace"
        raise SystemExit(msg)
    project = where / "pyproject.toml"
    if not project.is_file() or project.read_text() != text:
        project.write_text(text)


def exit_codes(module: Module, where: Path) -> dict[str, int | None]:
    """Mutant name -> mutmut's exit code for it (None: not run), for the module's functions."""
    meta = where / "mutants" / (module.mutate + ".meta")
    if not meta.is_file():
        return {}
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    if module.functions:
        codes = {k: v for k, v in codes.items() if _selected(module, k)}
    return codes


def _selected(module: Module, name: str) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(name, pattern) for pattern in module.functions)


def status(code: int | None) -> str:
    """mutmut's name for an exit code, as `mutmut results` prints it."""
    if code is None:
        return "not checked"
    if code in KILLED:
        return "killed"
    if code in TIMEOUT:
        return "timeout"
    if code in NO_TESTS:
        return "no tests"
    return {0: "survived", 37: "caught by type check", 34: "skipped"}.get(code, "suspicious")


def mutmut(where: Path, *args: str) -> int:
    """Run mutmut in the scratch checkout; its output goes to ours."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "MUTANT_UNDER_TEST"}}
    return subprocess.run([MUTMUT, *args], cwd=where, env=env, check=False).returncode


def in_place(where: Path) -> dict[str, str]:
    """Survivors re-run in place (tests/mutation/survivors.py): name -> killed or survived."""
    record = where / "survivors.json"
    return json.loads(record.read_text()) if record.is_file() else {}


def equivalent(module: Module, root: Path = ROOT) -> dict[str, str]:
    """The mutants judged equivalent (tests/mutation/equivalent.toml): name -> why."""
    with (root / "tests" / "mutation" / "equivalent.toml").open("rb") as handle:
        table: dict[str, str] = tomllib.load(handle).get(module.name, {})
    return table


def score(module: Module, where: Path) -> str:
    """The counts by status, as docs/testing.md's tables give them, and the survivors."""
    codes = exit_codes(module, where)
    counts = Counter(status(code) for code in codes.values())
    run = sum(n for s, n in counts.items() if s != "not checked")
    killed = counts["killed"] + counts["timeout"]
    lines = [f"{module.name} ({module.mutate}): {len(codes)} mutants, {run} run"]
    lines += [f"  {name}: {count}" for name, count in sorted(counts.items())]
    if run:
        lines.append(f"  killed (with timeouts) / run: {killed}/{run} = {100 * killed / run:.1f}%")
    rerun, judged = in_place(where), equivalent(module)
    left = sorted(k for k, v in codes.items() if status(v) in {"survived", "no tests"})
    in_place_killed = [k for k in left if rerun.get(k) == "killed"]
    left = [k for k in left if k not in in_place_killed]
    same = [k for k in left if k in judged]
    gaps = [k for k in left if k not in judged]
    if rerun:
        lines.append(f"  killed in place (wider set): {len(in_place_killed)}")
    if run:
        total = killed + len(in_place_killed)
        meant = run - len(same)
        lines.append(
            f"  score: {total}/{meant} non-equivalent killed = {100 * total / max(meant, 1):.1f}%"
            f" ({len(same)} equivalent)"
        )
    lines += [f"  equivalent: {k}: {judged[k]}" for k in same]
    lines += [f"  {status(codes[k])}{'' if k in rerun else ' (not re-run)'}: {k}" for k in gaps]
    return "\n".join(lines)


def main() -> int:
    known = modules()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", choices=sorted(known))
    parser.add_argument("--dir", type=Path, help="the scratch checkout (default: under TMPDIR)")
    parser.add_argument("--max-children", type=int, default=1, help="mutants run at once")
    parser.add_argument("--sample", type=int, help="run this many mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=21, help="the sample's random seed")
    parser.add_argument("--only", nargs="+", metavar="GLOB", help="(re-)run just these mutants")
    parser.add_argument("--score", action="store_true", help="only print the counts")
    options = parser.parse_args()
    module = known[options.module]
    where = options.dir or scratch_dir(module)
    if options.score:
        print(score(module, where))
        return 0
    prepare(module, where)
    print(f"scratch checkout: {where}", flush=True)
    children = ["--max-children", str(options.max_children)]
    names = list(options.only or module.functions)
    if options.sample is not None:
        if not exit_codes(module, where):
            # Generate the mutants (and the test map) without running any: a name matching none.
            mutmut(where, "run", *children, f"{module.dotted}.generate-only")
        every = sorted(exit_codes(module, where))
        chosen = random.Random(options.seed).sample(every, min(options.sample, len(every)))
        codes = exit_codes(module, where)
        names = [name for name in sorted(chosen) if codes.get(name) is None]
        print(f"sample: {len(chosen)} of {len(every)} mutants (seed {options.seed}), "
              f"{len(names)} not yet run", flush=True)  # fmt: skip
        if not names:
            print(score(module, where))
            return 0
    code = mutmut(where, "run", *children, *names)
    print(score(module, where))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
