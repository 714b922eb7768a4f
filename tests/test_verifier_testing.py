"""`cortex.verifiers.testing`: the supported way to test a verifier without a kernel.

It builds a verifier's Context and a fake workspace capture from plain values, and runs a
verifier through the kernel's own outcome check. Plugin authors depend on it, so what it
promises is pinned here; the example plugin's suite (examples/verifier-plugin/tests) uses it
as an author would.
"""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest
from conftest import ROOT

from cortex.verifiers import testing
from cortex.verifiers.base import Context, Outcome
from cortex.verifiers.config import VerifierConfig


class Echo:
    """A verifier that reports what it was given, or returns whatever `result` is."""

    kind = "echo"
    version = "1"

    def __init__(self, result: object = None, problem: str | None = None) -> None:
        self.result = result
        self.problem = problem

    def check(self, requirement: str, context: Context) -> str | None:  # noqa: ARG002
        return self.problem

    def run(self, requirement: str, context: Context) -> Outcome:
        if self.result is not None:
            return self.result  # type: ignore[return-value]  # a broken plugin, on purpose
        approved = context.approve("unit", ["true"])
        return Outcome(
            status="passed",
            summary=f"{requirement}: changed={context.changed} approved={approved}",
        )


def test_a_default_context_is_a_clean_bound_workspace(tmp_path: Path) -> None:
    context = testing.make_context(tmp_path)
    assert context.root == str(tmp_path)
    assert context.changed == []
    assert context.start.bound
    assert context.env == {}
    assert context.case.workspace.root == str(tmp_path)
    assert context.case.status == "changing"
    assert context.approve("unit", ["true"]) is False


def test_changed_files_shape_the_start_capture(tmp_path: Path) -> None:
    one = testing.make_context(tmp_path, changed=["a.py"])
    again = testing.make_context(tmp_path, changed=["a.py"])
    other = testing.make_context(tmp_path, changed=["b.py"])
    assert one.start.changed == ["a.py"]
    assert one.start.same_state(again.start)
    assert not one.start.same_state(other.start)
    unknown = testing.make_context(tmp_path, changed=None)
    assert unknown.changed is None
    assert not unknown.start.bound
    given = testing.make_context(tmp_path, start=testing.fake_capture(["c.py"]))
    assert given.changed == ["c.py"]


def test_paths_and_argv_are_refused_in_shapes_the_kernel_never_gives(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relative"):
        testing.make_context(tmp_path, changed=["/etc/passwd"])
    with pytest.raises(TypeError):
        testing.make_context(tmp_path, changed="app.py")
    with pytest.raises(TypeError):
        testing.make_context(tmp_path, verifiers={"unit": "pytest -q"})


def test_verifiers_and_approval_are_configurable(tmp_path: Path) -> None:
    context = testing.make_context(
        tmp_path,
        verifiers={"unit": ["pytest", "-q"], "lint": VerifierConfig(argv=("ruff",), kind="lint")},
        approve=lambda name, argv: name == "unit" and list(argv) == ["true"],
    )
    assert context.verifiers["unit"].argv == ("pytest", "-q")
    assert context.verifiers["lint"].kind == "lint"
    outcome = testing.run(Echo(), "echo", context)
    assert outcome.summary == "echo: changed=[] approved=True"
    assert testing.make_context(tmp_path, approve=True).approve("any", []) is True


def test_run_refuses_what_check_refuses(tmp_path: Path) -> None:
    with pytest.raises(testing.CheckRefusedError) as refused:
        testing.run(Echo(problem="needs a table"), "echo", testing.make_context(tmp_path))
    assert (refused.value.requirement, refused.value.reason) == ("echo", "needs a table")


@pytest.mark.parametrize(
    ("result", "error"),
    [
        ({"status": "passed", "summary": "a dict"}, TypeError),
        (Outcome(status="great", summary="x"), msgspec.ValidationError),  # type: ignore[arg-type]
        (Outcome(status="passed", summary="lone \udcff"), UnicodeEncodeError),
    ],
)
def test_run_raises_where_the_kernel_would_block(
    tmp_path: Path, result: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        testing.run(Echo(result=result), "echo", testing.make_context(tmp_path))


def test_run_returns_the_outcome_cut_as_the_kernel_keeps_it(tmp_path: Path) -> None:
    long = Outcome(status="failed", summary="s" * 5000, notes=["n"] * 50)
    outcome = testing.run(Echo(result=long), "echo", testing.make_context(tmp_path))
    assert len(outcome.summary) < 5000
    assert len(outcome.notes) < 50
    assert long.notes == ["n"] * 50, "the verifier's own outcome is left as it was"


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from cortex.verifiers import testing` imports the module cortex.verifiers.testing.
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_testing_depends_only_on_the_layers_a_verifier_may_use() -> None:
    own = {
        name
        for name in imported_modules(ROOT / "cortex" / "verifiers" / "testing.py")
        if name.startswith("cortex")
    }
    allowed = ("cortex.cases", "cortex.workspace", "cortex.verifiers")
    assert own, "the scan found no import"
    assert sorted(n for n in own if not n.startswith(allowed)) == []


def test_nothing_in_cortex_imports_testing() -> None:
    """It is for plugin authors' suites: no command loads it."""
    users = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "cortex").rglob("*.py")
        if path.name != "testing.py" and "cortex.verifiers.testing" in imported_modules(path)
    ]
    assert users == []
