"""What every surface (the CLI, the MCP server) does around a use case.

Build a kernel for the caller's directory and environment, run the use case, redact the answer
the way stored text is redacted, and turn any failure into the same envelope and exit status.
Both surfaces call `execute`, so one operation answers identically through either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from cortex.cases.errors import CortexError
from cortex.kernel.envelope import Envelope, Result, Spelling, failure, success

if TYPE_CHECKING:
    from cortex.cases.records import Via
    from cortex.cases.redact import Redactor
    from cortex.kernel.kernel import Kernel
    from cortex.kernel.progress import Progress

EXIT_INTERRUPTED = 130

Seen = dict[str, Any]
"""What a use case learned before it failed (the redactor), so the error can be redacted too."""


class InternalError(CortexError):
    """An unexpected exception, reported without a traceback."""


def in_kernel(
    cwd: str,
    env: Mapping[str, str],
    default_actor: str,
    use_case: Callable[[Kernel], Result],
    *,
    progress: Progress | None = None,
    via: Via | None = None,
    stdin: IO[bytes] | None = None,
) -> Callable[[Seen], Result]:
    """A body for `execute` that runs `use_case` in a kernel built for `cwd` and `env`.

    `progress` is the face's listener for long use cases (`cortex.kernel.progress`), if any;
    `via` is how the call arrived, as the face decided (docs/design/trust.md); `stdin` is what
    an input's `-` reads.
    """

    def body(seen: Seen) -> Result:
        from cortex.cases.scrub import scrub_value
        from cortex.kernel.kernel import Kernel

        kernel = Kernel(
            cwd, env, default_actor=default_actor, progress=progress, via=via, stdin=stdin
        )
        seen["redactor"] = kernel.redactor
        seen["kernel"] = kernel
        result = use_case(kernel)
        if _moved_through_a_gate(kernel):
            # The capture hook's view of the workspace (docs/design/activity.md, section 3).
            from cortex.kernel.activity.capture_card import after_commit

            after_commit(kernel)
        # An answer echoes input only as the store keeps it: redacted, like everything written.
        # A secret minted for this caller (a lease token) is not input: it is returned whole.
        minted = {key: result.data[key] for key in result.minted}
        result.data = scrub_value(result.data, kernel.redactor)
        if minted:
            result.data.update(minted)
        result.actions = scrub_value(result.actions, kernel.redactor)
        return result

    return body


def redacted(kernel: Kernel, value: Any) -> Any:
    """Plain data as a face may show it: redacted the way stored text is.

    For faces that call use cases without `execute`, such as the studio's board.
    """
    from cortex.cases.scrub import scrub_value

    return scrub_value(value, kernel.redactor)


def scrubbed(redactor: Redactor, value: Any) -> Any:
    """Plain data with every string passed through `redactor` (a face's own error data)."""
    from cortex.cases.scrub import scrub_value

    return scrub_value(value, redactor)


def execute(
    command: str,
    body: Callable[[Seen], Result],
    *,
    env: Mapping[str, str],
    debug: IO[str] | None = None,
    spelling: Callable[[str], str] | None = None,
    actions: Spelling | None = None,
) -> tuple[Envelope, int]:
    """Run `body` and return its envelope and exit status; never raises but for SystemExit.

    `spelling` names an argument the way the caller's face does, for messages that name one;
    `actions` writes a next step the face's way (default: the CLI's command line).
    """
    seen: Seen = {}
    try:
        result = body(seen)
        return success(command, result, spelling=actions), result.exit_status
    except CortexError as exc:
        if spelling is not None:
            exc.spell(spelling)
        kernel = seen.get("kernel")
        if kernel is not None:
            # Counted where metrics can see it, outside the case's commits (cases/refusals.py).
            kernel.record_refusal(command, exc.code)
        return refusal(command, exc, seen, actions=actions), exc.exit_status
    except KeyboardInterrupt as exc:
        # Ctrl-C, SIGTERM during a verifier run (which carries its own status, 143), or a
        # cancelled request (which says what was stopped).
        status = int(getattr(exc, "exit_status", EXIT_INTERRUPTED))
        message = str(getattr(exc, "message", "interrupted"))
        return refusal(command, InternalError(message), seen), status
    except Exception as exc:  # noqa: BLE001 - the contract is an envelope, never a traceback
        if env.get("CORTEX_DEBUG") and debug is not None:
            import traceback

            traceback.print_exc(file=debug)
        error = InternalError(f"internal error: {type(exc).__name__}: {exc}")
        return refusal(command, error, seen), InternalError.exit_status


def refusal(
    command: str, exc: CortexError, seen: Seen | None = None, *, actions: Spelling | None = None
) -> Envelope:
    """The envelope of a failed command, its message, report and actions redacted.

    The one place error text becomes output: every error envelope of the CLI and of the MCP
    server is made here and nowhere else (tests/test_layering.py holds that), so none can skip
    redaction. A message may quote input with `repr()`; the redactor reads through its escapes.
    """
    seen = {} if seen is None else seen
    exc.message = _redact(exc.message, seen)
    return failure(
        command,
        exc,
        data=_redacted(getattr(exc, "report", None), seen),
        actions=_redacted(getattr(exc, "actions", None), seen),
        spelling=actions,
    )


def parse_refusal(command: str, exc: CortexError, cwd: str, env: Mapping[str, str]) -> Envelope:
    """The envelope of a command line that did not parse, redacted with configured literals."""
    return refusal(command, exc, {"redactor": redactor_for(cwd, env)})


def redactor_for(cwd: str, env: Mapping[str, str]) -> Redactor:
    """The redactor of the workspace at `cwd`, for text made before any kernel exists.

    When the configuration cannot be read (it is itself what is broken), the built-in rules
    still apply.
    """
    from cortex.cases.redact import Redactor

    try:
        from cortex.kernel.config import load_config
        from cortex.workspace.identity import discover

        return Redactor(load_config(discover(cwd, env).root, env).redact_literals)
    except Exception:  # noqa: BLE001 - an answer must come out whatever the configuration is
        return Redactor()


def _redactor(seen: Seen) -> Any:
    redactor = seen.get("redactor")
    if redactor is None:
        from cortex.cases.redact import Redactor

        redactor = Redactor()
    return redactor


def _redact(message: str, seen: Seen) -> str:
    """Error messages can quote input; they get the same redaction as stored text."""
    clean: str = _redactor(seen)(message)
    return clean


def _redacted(value: Any, seen: Seen) -> Any:
    """A failure's actions and report, redacted like a success's data."""
    if value is None:
        return None
    from cortex.cases.scrub import scrub_value

    return scrub_value(value, _redactor(seen))


def to_json(envelope: Envelope) -> str:
    """The envelope as one line of JSON, as `--json` prints it and MCP returns it."""
    import msgspec

    from cortex.cases.records import encode

    try:
        return encode(envelope).decode()
    except (msgspec.EncodeError, UnicodeError):
        return msgspec.json.encode(_printable(msgspec.to_builtins(envelope))).decode()


def _printable(value: Any) -> Any:
    """Replace what cannot be written as UTF-8 (undecodable path bytes) with U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _moved_through_a_gate(kernel: Kernel) -> bool:
    """Whether this call's commit moved its case into, out of or within a gated phase.

    Only then can the capture card be wrong; most writes (evidence, notes) move nothing.
    """
    if kernel.writing is None:
        return False
    from cortex.kernel.lifecycle import GATED  # loaded by every writer already

    task_id, store = kernel.writing
    moved = store.moved.get(task_id)
    return store is kernel.store and moved is not None and not GATED.isdisjoint(moved)
