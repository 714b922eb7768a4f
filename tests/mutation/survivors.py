"""Re-run mutmut's surviving mutants in place, against a wider set of tests.

mutmut runs each mutant against the in-process tests that reach it; tests that reach the code
through a subprocess (the CLI as a real process, `cortex serve`, the campaigns) cannot see its
mutants, since a child process runs the original code. This script applies each survivor
(`mutmut apply`) to the mutated file, runs the wider set, and puts the file back.

    .venv/bin/mutmut run && .venv/bin/python tests/mutation/survivors.py      # redact, here
    .venv/bin/python tests/mutation/survivors.py MODULE                         # a scratch run

Without MODULE it works on the checkout itself, after `mutmut run` there ([tool.mutmut] is
redact's); it restores the file whatever happens. With MODULE it works in that module's scratch
checkout (tests/mutation/mutate.py), on the mutants that survived or that no test in mutmut's set
reached, against the table's `wider` list, and records the results in `survivors.json` there,
which `mutate.py MODULE --score` counts.

    .venv/bin/python tests/mutation/survivors.py MODULE --mutant NAME... --tests TEST...

checks that the given tests fail against each given mutant (how a test written for a mutant is
shown to kill it); nothing is recorded, unless `--record` (survivors re-run against the tests
that reach them through a subprocess, such as the crash tests for crash points).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutate  # tests/mutation/mutate.py, beside this file

ROOT = mutate.ROOT
REDACT_WIDER = [
    "tests/test_redact.py",
    "tests/test_secret_corpus.py",
    "tests/test_mcp_adversarial.py::test_secrets_come_back_redacted_on_both_surfaces",
    "tests/test_mcp_adversarial.py::test_configured_redaction_literals_cover_argument_errors",
    "tests/test_audit.py",
    "tests/test_tree_artifacts.py",
]
MUTMUT = mutate.MUTMUT


def survivors(where: Path) -> list[str]:
    """The names `mutmut results` reports as survived (redact, in the checkout)."""
    out = subprocess.run(
        [MUTMUT, "results"], cwd=where, capture_output=True, text=True, check=True
    ).stdout
    return [line.split(":")[0].strip() for line in out.splitlines() if line.endswith("survived")]


def apply(where: Path, target: Path, name: str) -> None:
    """Write mutant `name` into `target` (in `where`), in its own class.

    `mutmut apply` (3.8) replaces the first function of the mutant's name anywhere in the file,
    whatever its class: a mutant of `_Helpers.__init__` in capture.py would land in
    `_Seen.__init__`. So the mutant is read from mutmut's generated file and put in place of
    the function of that name in that class (or at the top level).
    """
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        find_top_level_function_or_method,
        read_functions_from_index,
    )
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    relative = target.relative_to(where)
    function, owner = orig_function_and_class_names_from_key(name)
    # mutmut's line index finds the mutant without parsing the whole generated file (tens of
    # thousands of lines: seconds a mutant); it reads `mutants/` relative to the directory.
    here = Path.cwd()
    os.chdir(where)
    try:
        indexed = read_functions_from_index(name, relative)
    finally:
        os.chdir(here)
    if indexed is not None:
        mutant: cst.FunctionDef | None = indexed[1]
    else:
        generated = cst.parse_module((where / "mutants" / relative).read_text())
        mutant = find_top_level_function_or_method(generated, name.rpartition(".")[-1])
    module = cst.parse_module(target.read_text())
    scope: Sequence[cst.CSTNode] = module.body
    if owner is not None:
        classes = [n for n in module.body if isinstance(n, cst.ClassDef) and n.name.value == owner]
        body = classes[0].body if classes else None
        scope = body.body if isinstance(body, cst.IndentedBlock) else []
    found = [n for n in scope if isinstance(n, cst.FunctionDef) and n.name.value == function]
    if mutant is None or not found:
        msg = f"cannot apply {name}: its function is not in {relative} or its mutants"
        raise SystemExit(msg)
    replaced = module.deep_replace(found[0], mutant.with_changes(name=cst.Name(function)))
    target.write_text(cast("cst.Module", replaced).code)


def rerun(where: Path, target: Path, names: list[str], wider: list[str]) -> dict[str, str]:
    """Apply each mutant in turn, run `wider` in `where`, restore `target`; name -> status."""
    original = target.read_bytes()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "MUTANT_UNDER_TEST"}}
    results: dict[str, str] = {}
    try:
        for name in names:
            apply(where, target, name)
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *wider],
                cwd=where,
                env=env,
                capture_output=True,
                check=False,
            )
            if proc.returncode not in (0, 1):
                # 1 is a failed test; anything else (no tests collected, a usage error, an
                # interrupted run) says nothing about the mutant.
                tail = proc.stdout.decode(errors="replace").strip().splitlines()[-3:]
                msg = f"pytest exited {proc.returncode} on {name}: " + " / ".join(tail)
                raise SystemExit(msg)
            results[name] = "survived" if proc.returncode == 0 else "killed"
            print(f"{results[name]:9} {name}", flush=True)
            target.write_bytes(original)
    finally:
        target.write_bytes(original)
    return results


def main() -> int:
    known = mutate.modules()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?", choices=sorted(known))
    parser.add_argument("--dir", type=Path, help="the scratch checkout (default: mutate.py's)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--mutant", nargs="+", help="with MODULE: just these mutants (globs)")
    parser.add_argument("--tests", nargs="+", help="with --mutant: run these tests instead")
    parser.add_argument("--record", action="store_true", help="with --mutant: record results")
    options = parser.parse_args()
    if options.module is None:
        where, wider = ROOT, REDACT_WIDER
        target = ROOT / "cortex" / "cases" / "redact.py"
        names = survivors(where)
        record = None
    else:
        module = known[options.module]
        where = options.dir or mutate.scratch_dir(module)
        mutate.prepare(module, where)  # tests written since the mutmut run are there too
        target, wider = where / module.mutate, module.wider
        codes = mutate.exit_codes(module, where)
        names = sorted(k for k, v in codes.items() if mutate.status(v) in {"survived", "no tests"})
        record = where / "survivors.json"
        if options.mutant:
            names = sorted(k for k in codes if any(fnmatch(k, p) for p in options.mutant))
            wider = options.tests or wider
            record = record if options.record else None
    results = rerun(where, target, names, wider)
    kept = [name for name, status in results.items() if status == "survived"]
    print(f"\n{len(results) - len(kept)} of {len(results)} survivors killed in place")
    if record is not None:
        previous = json.loads(record.read_text()) if record.is_file() else {}
        record.write_text(json.dumps(previous | results, indent=1, sort_keys=True) + "\n")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
