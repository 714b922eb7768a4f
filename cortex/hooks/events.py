"""One function per host event: what Cortex reads or keeps, and what it answers.

Each takes the `Call` and returns the host's JSON answer, or None for nothing to say. They raise
freely: `entry.run` turns any failure into silence and a line for `doctor`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cortex.hooks.entry import Call

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel


def kernel_for(call: Call) -> Kernel:
    """The kernel of the agent's workspace, acting for its host session."""
    from cortex.kernel.host_session import session, with_process
    from cortex.kernel.kernel import Kernel

    found = session(call.host, call.payload.get("session_id"))
    if found is not None:
        found = with_process(found, call.env)
    named = call.env.get("CORTEX_ACTOR")
    actor = named or (found.actor if found is not None else call.host)
    return Kernel(call.cwd, call.env, default_actor=actor, via="hook", host_session=found)


def context(event: str, text: str) -> dict[str, Any]:
    """Text the host adds to the model's context (both hosts read this shape)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _keep_alive(kernel: Kernel) -> None:
    """Renew the session's lease where due, and refresh the capture card (both courtesies)."""
    from cortex.kernel.activity.capture_card import after_commit
    from cortex.kernel.activity.session_lease import keep_alive
    from cortex.kernel.errors import CortexError

    with contextlib.suppress(CortexError, OSError):
        keep_alive(kernel)
    after_commit(kernel)


def session_start(call: Call) -> dict[str, Any] | None:
    """The brief of this workspace's open cases; nothing when none is open."""
    from cortex.hooks.text import brief_text
    from cortex.kernel.views.brief import brief

    kernel = kernel_for(call)
    _keep_alive(kernel)
    source = call.payload.get("source")
    hint = None
    if source == "compact":
        from cortex.kernel.activity.session_lease import focus

        hint = focus(kernel)
    found = brief(kernel, hint=hint)
    if not found["cases"]:
        return None
    # Records were redacted when written; the changed files' names come from the work tree.
    text = kernel.redactor(brief_text(found, source=str(source or "startup")))
    return context("SessionStart", text)


def user_prompt(call: Call) -> dict[str, Any] | None:
    """Keep this session's lease alive while a person is still talking to the agent."""
    _keep_alive(kernel_for(call))
    return None


def stop(call: Call) -> dict[str, Any] | None:
    """Block the stop once when a change in progress has no current proof."""
    if call.payload.get("stop_hook_active") is True:
        return None  # the host's own loop guard: this stop follows one we blocked
    from cortex.hooks.text import stop_reason
    from cortex.kernel.views.brief import stop_gate

    kernel = kernel_for(call)
    if not kernel.config.hooks.stop_gate:
        return None
    _keep_alive(kernel)
    gate = stop_gate(kernel)
    if gate is None:
        return None
    return {"decision": "block", "reason": kernel.redactor(stop_reason(gate))}


def subagent_stop(call: Call) -> dict[str, Any] | None:
    """A subagent's stop waits only for proof of edits it made itself (docs/design/hosts.md)."""
    if call.payload.get("stop_hook_active") is True:
        return None
    from cortex.hooks.text import stop_reason
    from cortex.kernel.views.brief import stop_gate

    agent, kind = call.payload.get("agent_id"), call.payload.get("agent_type")
    if not isinstance(agent, str) or not agent:
        return None
    from cortex.hooks.capture import agent_label
    from cortex.kernel.views.claims import edited_by

    kernel = kernel_for(call)
    if not kernel.config.hooks.stop_gate:
        return None
    edited = edited_by(kernel, agent_label(kind if isinstance(kind, str) else "agent", agent))
    if not edited:
        return None
    gate = stop_gate(kernel, edited_since=edited)
    if gate is None:
        return None
    return {"decision": "block", "reason": kernel.redactor(stop_reason(gate))}


def pre_compact(call: Call) -> dict[str, Any] | None:
    """Keep which case the session is on, so the brief after compaction leads with it."""
    from cortex.kernel.views.brief import brief

    kernel = kernel_for(call)
    found = brief(kernel, recall=False)
    if found["focus"] is not None:
        from cortex.kernel.activity.session_lease import remember_focus

        remember_focus(kernel, found["focus"])
    return None


HANDLERS: dict[str, Callable[[Call], dict[str, Any] | None]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt,
    "Stop": stop,
    "SubagentStop": subagent_stop,
    "PreCompact": pre_compact,
}
"""The events `cortex.hooks.capture` does not answer (it takes the cheap ones first)."""
