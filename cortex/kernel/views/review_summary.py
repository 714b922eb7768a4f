"""The verdict of `cortex review` as a Markdown summary, for `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

from cortex.kernel.envelope import Data


def _origin(provenance: Data | None) -> str:
    """Where a case's proof came from, in a word or two (`local`, `remote, reproduced`)."""
    if provenance is None or provenance["origin"] is None:
        return "-"
    words = [provenance["origin"]]
    if provenance["source"]:
        words.append(provenance["source"])
    if provenance["reproduced"]:
        words.append("reproduced")
    return ", ".join(words)


def _named(ref: str, commit: str) -> str:
    from cortex.kernel.views.markdown import code

    return code(commit) if ref == commit else f"{code(ref)} at {code(commit)}"


def markdown(data: Data) -> str:
    """The verdict as a Markdown summary for `$GITHUB_STEP_SUMMARY` (verdict first)."""
    from cortex.kernel.views.markdown import code, inline

    head, base = data["head"], data["base"]
    lines = [
        f"## Cortex review: **{inline(data['verdict'])}**",
        "",
        inline(data["summary"]),
        "",
        (f"- Head: {_named(head['ref'], head['commit'])}, tree {code(head['tree'] or 'unknown')}"),
        (
            f"- Base: {_named(base['ref'], base['commit'])}; merge base "
            f"{code(data['mergeBase'])}; {data['commits']} commit(s)"
        ),
        (
            f"- Policy: accepts {code(data['policy']['accept'])} proof (set by "
            f"{inline(data['policy']['from'])})"
        ),
        "",
    ]
    if data["cases"]:
        lines += [
            "| case | claimed by | phase | verdict | proof from | code |",
            "|---|---|---|---|---|---|",
        ]
        for case in data["cases"]:
            cells = [
                code(case["taskId"]),
                inline(", ".join(case["claimedBy"])),
                inline(case["phase"] or "missing"),
                inline(case["assessment"] or "-"),
                inline(_origin(case["provenance"])),
                inline(case["currency"] or "-"),
            ]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    if data["problems"]:
        lines += ["Problems:", ""]
        for problem in data["problems"]:
            where = f"{code(problem['taskId'])} " if problem.get("taskId") else ""
            lines.append(f"- {where}{code(problem['code'])}: {inline(problem['message'])}")
        lines.append("")
    if data["seen"]:
        lines += ["Other open cases of the branch (not judged):", ""]
        lines += [
            f"- {code(s['taskId'])} ({inline(s['phase'])}): {inline(s['goal'] or '')}"
            for s in data["seen"]
        ]
        lines.append("")
    flagged = [(c["taskId"], f) for c in data["cases"] for f in (c.get("observed") or {}).get(
        "flags", [])]  # fmt: skip
    if flagged:
        lines += ["Observed by the agent's host, against its claims:", ""]
        lines += [
            f"- {code(task)} {code(f['kind'])}: {inline(f['message'])}" for task, f in flagged
        ]
        lines.append("")
    lines += [f"- Warning: {inline(w)}" for w in data["warnings"]]
    return "\n".join(lines).rstrip("\n") + "\n"
