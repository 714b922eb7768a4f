"""The modules the per-call commands load, pinned: a new one on the path is a decision.

`case status`, `case evidence add` and `case note` run in a fresh interpreter; every module they
load beyond what `import msgspec` loads by itself (the floor's own imports, docs/benchmarks.md)
is compared with the pin below. Each module costs its import on every call an agent makes (a
small cortex module about 0.2 ms, `dataclasses` about 1.5 ms with what it pulls in), so a new
one fails this test with the module, the command and the module that imported it. To accept
it, add it to that command's set in `PINNED` and say why in the commit; otherwise import it
lazily, inside the function that needs it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import Cli

pytestmark = pytest.mark.process

PINNED: dict[str, frozenset[str]] = {
    "status": frozenset(
        [
            "cortex",
            "cortex.cases",
            "cortex.cases._crash",
            "cortex.cases.bounds",
            "cortex.cases.digest",
            "cortex.cases.documents",
            "cortex.cases.errors",
            "cortex.cases.fsio",
            "cortex.cases.ids",
            "cortex.cases.layout",
            "cortex.cases.ledger",
            "cortex.cases.records",
            "cortex.cases.redact",
            "cortex.cases.scrub",
            "cortex.cases.state_dir",
            "cortex.cases.store",
            "cortex.cli",
            "cortex.cli.commands",
            "cortex.cli.grammar",
            "cortex.cli.parser",
            "cortex.cli.terminal",
            "cortex.kernel",
            "cortex.kernel.config",
            "cortex.kernel.inputs",
            "cortex.kernel.envelope",
            "cortex.kernel.errors",
            "cortex.kernel.host_session",
            "cortex.kernel.kernel",
            "cortex.kernel.lease",
            "cortex.kernel.lifecycle",
            "cortex.kernel.surface",
            "cortex.kernel.validate",
            "cortex.kernel.views",
            "cortex.kernel.views.status",
            "cortex.main",
            "cortex.verifiers",
            "cortex.verifiers.config",
            "cortex.workspace",
            "cortex.workspace.freshness",
            "cortex.workspace.identity",
            "_sha256",
            "errno",
            "fcntl",
        ]
    ),
    "evidence": frozenset(
        [
            "cortex",
            "cortex.cases",
            "cortex.cases._crash",
            "cortex.cases.bounds",
            "cortex.cases.digest",
            "cortex.cases.errors",
            "cortex.cases.fsio",
            "cortex.cases.ids",
            "cortex.cases.journal",
            "cortex.cases.layout",
            "cortex.cases.ledger",
            "cortex.cases.lock",
            "cortex.cases.records",
            "cortex.cases.redact",
            "cortex.cases.scrub",
            "cortex.cases.state_dir",
            "cortex.cases.store",
            "cortex.cases.txn",
            "cortex.cli",
            "cortex.cli.commands",
            "cortex.cli.grammar",
            "cortex.cli.parser",
            "cortex.cli.terminal",
            "cortex.kernel",
            "cortex.kernel.config",
            "cortex.kernel.inputs",
            "cortex.kernel.envelope",
            "cortex.kernel.errors",
            "cortex.kernel.host_session",
            "cortex.kernel.kernel",
            "cortex.kernel.lifecycle",
            "cortex.kernel.provenance",
            "cortex.kernel.refs",
            # The package of the writing steps (issue 31): its `__init__` is a docstring only.
            "cortex.kernel.steps",
            "cortex.kernel.steps.evidence",
            "cortex.kernel.steps.raw_input",
            "cortex.kernel.surface",
            "cortex.kernel.validate",
            "cortex.main",
            "cortex.recall",
            "cortex.recall.notable",
            "cortex.verifiers",
            "cortex.verifiers.config",
            "cortex.workspace",
            "cortex.workspace.identity",
            "_sha256",
            "errno",
            "fcntl",
        ]
    ),
}
PINNED["note"] = PINNED["evidence"] - {"cortex.kernel.steps.raw_input"}

PROBE = """
import io, sys
baseline = set(sys.modules)
importer = {}

class Watch:
    # Names, for each module, the module whose code imported it (the first frame outside
    # the import machinery); finds nothing itself.
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("importlib", "_frozen_importlib")
        ):
            frame = frame.f_back
        importer.setdefault(name, frame.f_globals.get("__name__", "?") if frame else "?")
        return None

sys.meta_path.insert(0, Watch())
import msgspec  # the floor's own import: what it loads is not the command's
floor = set(sys.modules)
from cortex.main import main
assert main(ARGV, stdout=io.StringIO()) == 0, ARGV
loaded = sorted(set(sys.modules) - floor)
import json
sys.stdout.write(json.dumps({"loaded": loaded, "by": importer}))
"""


def loaded_by(cli: Cli, argv: list[str]) -> tuple[set[str], dict[str, str]]:
    """The modules `argv` loads in a fresh interpreter beyond msgspec's, and who imported each."""
    probe = PROBE.replace("ARGV", repr(argv))
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    return set(report["loaded"]), report["by"]


def difference(command: str, loaded: set[str], by: dict[str, str]) -> list[str]:
    """What differs from the pin, each as a line saying what to do about it."""
    pinned = PINNED[command]
    lines = [
        f"new on the `{command}` path: {name} (imported by {by.get(name, '?')}); if it must "
        f"load on every call, add it to PINNED[{command!r}] in tests/test_import_pin.py and say "
        "why in the commit, else import it inside the function that needs it"
        for name in sorted(loaded - pinned)
    ]
    lines += [
        f"no longer on the `{command}` path: {name}; remove it from PINNED[{command!r}] in "
        "tests/test_import_pin.py"
        for name in sorted(pinned - loaded)
    ]
    return lines


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("status", ["case", "status", "TASK", "--json"]),
        ("evidence", ["case", "evidence", "add", "TASK", "--claim", "x", "--json"]),
        ("note", ["case", "note", "TASK", "a note", "--json"]),
    ],
)
def test_the_per_call_import_set_is_pinned(
    cli: Cli, task: str, command: str, argv: list[str]
) -> None:
    loaded, by = loaded_by(cli, [task if word == "TASK" else word for word in argv])
    assert "cortex.main" in loaded, "the probe did not run the command"
    lines = difference(command, loaded, by)
    assert not lines, "\n".join(lines)


def test_a_new_module_is_named_with_its_importer_and_the_fix() -> None:
    """A test of the test: the message names the module, who imported it, and how to accept it."""
    loaded = set(PINNED["status"]) | {"dataclasses"}
    lines = difference("status", loaded - {"cortex.kernel.lease"}, {"dataclasses": "cortex.x"})
    assert lines[0].startswith("new on the `status` path: dataclasses (imported by cortex.x)")
    assert "PINNED['status'] in tests/test_import_pin.py" in lines[0]
    assert lines[1].startswith("no longer on the `status` path: cortex.kernel.lease")


@pytest.mark.parametrize(
    "argv",
    [
        ["case", "status", "TASK"],
        ["case", "show", "TASK"],
        ["case", "list"],
        ["case", "timeline", "TASK"],
    ],
)
def test_text_into_a_pipe_loads_no_rich(cli: Cli, task: str, argv: list[str]) -> None:
    """What a person reads off a terminal, an agent reads from a pipe: rich is for terminals."""
    loaded, by = loaded_by(cli, [task if word == "TASK" else word for word in argv])
    assert "cortex.main" in loaded
    drawn = sorted(name for name in loaded if name == "rich" or name.startswith("rich."))
    assert drawn == [], f"rich loaded by {by.get(drawn[0]) if drawn else ''}"


LAUNCH_PROBE = """
import io, sys
sys.argv = ["cortex", *ARGV]
from cortex.launch import entrypoint
sys.stdout = io.StringIO()
code = entrypoint()
sys.stdout = sys.__stdout__
print(code, sorted(name for name in ("typing_extensions", "inspect", "ast") if name in sys.modules))
"""


@pytest.mark.parametrize(
    "argv",
    [["case", "status", "TASK", "--json"], ["case", "evidence", "add", "TASK", "--claim", "x"]],
)
def test_the_console_script_loads_msgspec_without_typing_extensions(
    cli: Cli, task: str, argv: list[str]
) -> None:
    """msgspec takes typing_extensions (with inspect, ast, dis) when it is installed, about 10 ms
    a process; on Python 3.11 typing's own hints serve every type Cortex declares."""
    probe = LAUNCH_PROBE.replace("ARGV", repr([task if w == "TASK" else w for w in argv]))
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["0", "[]"]


def test_typing_extensions_still_imports_after_the_launch(cli: Cli) -> None:
    """The block lasts only for msgspec's own import: a face that needs typing_extensions later
    in the same process (the MCP SDK, the board) still gets it."""
    probe = (
        "import sys\nsys.argv = ['cortex', 'case', 'list', '--json']\nfrom cortex import launch\n"
        "import io\nsys.stdout = io.StringIO()\ncode = launch.entrypoint()\n"
        "sys.stdout = sys.__stdout__\nassert 'typing_extensions' not in sys.modules\n"
        "import typing_extensions\nprint(code, typing_extensions.__name__)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["0", "typing_extensions"]
