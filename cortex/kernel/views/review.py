"""`cortex review`: whether the code of a branch is the code its cases verified.

The merge gate (docs/design/report.md, "The merge gate"): the commits of `base..head`, the
cases that claim them (their `Cortex-Case:` trailers, and the cases opened on the branch at
its fork point or after it), and each case judged by `assess` against the head commit as a
clean checkout, so a receipt counts exactly when the verified code is the code at `head`.

Read-only, and it never runs a verifier or talks to a remote: CI fetches the cases first
(`cortex case fetch --pr N`). Anything but `approve` is a refusal (exit 5) whose `data` holds
the whole verdict, as `audit` keeps its report.
"""

from __future__ import annotations

from typing import Any

from cortex.cases.bounds import SHARE_PR_CASES_MAX, SHARE_PR_COMMITS_MAX
from cortex.cases.documents import Decisions, Verification
from cortex.cases.errors import ArgumentError, CortexError, InvalidInputError, RefusedError
from cortex.cases.ids import is_id
from cortex.kernel.envelope import Result
from cortex.kernel.kernel import Kernel

Data = dict[str, Any]
FORMATS = ("text", "md")
BASES = ("origin/HEAD", "main", "master")
"""Where `--base` points when it is not given: the first of these that names a commit."""
VERDICTS = ("approve", "needs_verification", "request_changes")


class ReviewError(RefusedError):
    """The branch is not approved: the verdict travels in `data` (exit 5)."""

    def __init__(self, verdict: str, message: str, report: Data) -> None:
        super().__init__(message)
        self.code = verdict
        self.report = report


def review(
    kernel: Kernel, *, base: str | None = None, head: str | None = None, fmt: str | None = None
) -> Result:
    """The verdict for `base..head` (the module docstring); raises ReviewError unless approve."""
    from cortex.kernel.validate import shown

    fmt = fmt or "text"
    if fmt not in FORMATS:
        raise ArgumentError(f"{{format}} must be text or md, not {shown(fmt, 40)!r}", "format")
    workspace = kernel.workspace
    if workspace.kind != "git":
        raise InvalidInputError("review reads git history: run it inside a git repository")
    from cortex.workspace import history

    root, env = workspace.root, kernel.env
    head_ref = head or "HEAD"
    head_commit = history.resolve(root, env, head_ref)
    if head_commit is None:
        raise ArgumentError(f"{{head}} {shown(head_ref, 80)!r} names no commit here", "head")
    base_ref, base_commit = _base(root, env, base)
    fork = history.merge_base(root, env, base_commit, head_commit)
    if fork is None:
        msg = f"{{base}} {shown(base_ref, 80)!r} and {{head}} share no history"
        raise ArgumentError(msg, "base", "head")
    count = history.count_between(root, env, base_commit, head_commit) or 0
    if count > SHARE_PR_COMMITS_MAX:
        msg = (
            f"{{base}}..{{head}} has {count} commits, more than the {SHARE_PR_COMMITS_MAX} "
            "a review reads"
        )
        raise ArgumentError(msg, "base", "head")
    commits = history.commits_between(root, env, base_commit, head_commit) or []
    tree = history.trees(root, env, [head_commit]).get(head_commit)
    branch = history.current_branch(root, env) if head_ref == "HEAD" else None
    branch = branch or history.branch_of(root, env, head_ref)
    warnings: list[str] = []
    claims = _claims(kernel, commits, fork, branch, warnings)
    live = history.commit_capture(root, head_commit, tree)
    cases = [_case(kernel, task_id, how, live) for task_id, how in claims.items()]
    problems = [dict(p, taskId=c["taskId"]) for c in cases for p in c["problems"]]
    if not cases:
        where = f"on the branch {branch}" if branch else "(no branch is checked out)"
        problems.append(
            {
                "code": "no_case",
                "message": (
                    f"no case claims the {count} commit(s) of {base_ref}..{head_ref}: no "
                    f"Cortex-Case trailer, and no case of this store was opened {where} since "
                    f"{fork[:12]}"
                ),
                "taskId": None,
            }
        )
    if any(p["code"] == "failed" for p in problems):
        verdict = "request_changes"
    elif problems:
        verdict = "needs_verification"
    else:
        verdict = "approve"
    data: Data = {
        "verdict": verdict,
        "summary": _summary(verdict, cases, problems),
        "base": {"ref": base_ref, "commit": base_commit},
        "head": {"ref": head_ref, "commit": head_commit, "tree": tree, "branch": branch},
        "mergeBase": fork,
        "commits": count,
        "cases": cases,
        "problems": problems,
        "warnings": warnings,
        "format": fmt,
        "document": None,
    }
    from cortex.kernel.views.handoff.read import redact_all

    data = redact_all(data, kernel.redactor)
    if fmt == "md":
        data["document"] = markdown(data)
    if verdict != "approve":
        raise ReviewError(verdict, data["summary"], data)
    return Result(data=data)


def _base(root: str, env: Any, base: str | None) -> tuple[str, str]:
    from cortex.kernel.validate import shown
    from cortex.workspace import history

    if base is not None:
        commit = history.resolve(root, env, base)
        if commit is None:
            raise ArgumentError(f"{{base}} {shown(base, 80)!r} names no commit here", "base")
        return base, commit
    for ref in BASES:
        commit = history.resolve(root, env, ref)
        if commit is not None:
            return ref, commit
    msg = f"none of {', '.join(BASES)} names a commit here: give {{base}}"
    raise ArgumentError(msg, "base")


def _claims(
    kernel: Kernel, commits: list[Any], fork: str, branch: str | None, warnings: list[str]
) -> dict[str, list[str]]:
    """Task id -> how it claims the range (`trailer`, `branch`), in a stable order."""
    claims: dict[str, list[str]] = {}
    for commit in reversed(commits):  # oldest first
        for value in commit.trailers:
            if is_id(value, "task"):
                how = claims.setdefault(value, [])
                if "trailer" not in how:
                    how.append("trailer")
            else:
                warnings.append(
                    f"a Cortex-Case trailer of {commit.id[:12]} names {value[:80]!r}, not a "
                    "task id; ignored"
                )
    if branch is not None:
        inside = {fork, *(c.id for c in commits)}
        store = kernel.store
        for task_id in sorted(store.list_ids()):
            try:
                case = store.read_case(task_id)
            except CortexError as exc:
                warnings.append(f"case {task_id} cannot be read: {exc.message}")
                continue
            opened = case.workspace
            if (
                opened.branch == branch
                and opened.commit_before in inside
                and case.status != "abandoned"
            ):
                claims.setdefault(task_id, []).append("branch")
    if len(claims) > SHARE_PR_CASES_MAX:
        msg = f"{len(claims)} cases claim these commits, more than the {SHARE_PR_CASES_MAX} read"
        raise InvalidInputError(msg)
    return claims


def _case(kernel: Kernel, task_id: str, how: list[str], live: Any) -> Data:
    """One claiming case, judged against the head commit, with its problems."""
    store = kernel.store
    entry: Data = {
        "taskId": task_id,
        "claimedBy": how,
        "goal": None,
        "phase": None,
        "assessment": None,
        "currency": None,
        "problems": [],
    }
    problems: list[Data] = entry["problems"]
    if not store.exists(task_id):
        problems.append(
            {
                "code": "case_missing",
                "message": (
                    f"a Cortex-Case trailer names {task_id}, which this store does not hold: "
                    f"fetch it (cortex case fetch {task_id}, or --pr N)"
                ),
            }
        )
        return entry
    from cortex.kernel.assessment import assess

    case, documents = store.read_view(task_id)
    verification: Verification | None = documents.get("verification.json")
    decisions: Decisions | None = documents.get("decisions.json")
    assessment = assess(case, verification, live)
    currency = assessment.currency.summary if assessment.currency is not None else None
    entry.update(goal=case.goal, phase=case.status, assessment=assessment.status, currency=currency)
    if case.status != "complete":
        problems.append({"code": "not_complete", "message": f"the case is {case.status}"})
    reasons = "; ".join(assessment.reasons) or "nothing is current proof"
    if assessment.status == "failed":
        problems.append({"code": "failed", "message": reasons})
    elif assessment.status == "unverified":
        problems.append({"code": "no_proof", "message": reasons})
    elif assessment.status == "partial":
        problems.append({"code": "partial", "message": reasons})
    items = decisions.decisions if decisions else []
    pending = [d.id for d in items if d.status == "pending"]
    if pending:
        problems.append(
            {
                "code": "pending_decision",
                "message": f"waiting for a person: {', '.join(pending)}",
            }
        )
    answered = [d for d in items if d.status == "answered"]
    if answered:
        from cortex.kernel.views.labels import evidence_labels

        labels = evidence_labels(kernel, store, case, [], answered)
        contested = [d.id for d in answered if "[contested]" in labels.get(d.id, [])]
        if contested:
            problems.append(
                {
                    "code": "contested_decision",
                    "message": f"answered but contested, not resolved: {', '.join(contested)}",
                }
            )
    return entry


def _summary(verdict: str, cases: list[Data], problems: list[Data]) -> str:
    if verdict == "approve":
        return (
            f"approve: {len(cases)} case(s) complete, each with proof current for the head "
            "commit's tree"
        )
    first = problems[0]
    where = f"{first['taskId']}: " if first.get("taskId") else ""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{verdict}: {where}{first['code']}: {first['message']}{more}"


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
        "",
    ]
    if data["cases"]:
        lines += ["| case | claimed by | phase | verdict | code |", "|---|---|---|---|---|"]
        for case in data["cases"]:
            cells = [
                code(case["taskId"]),
                inline(", ".join(case["claimedBy"])),
                inline(case["phase"] or "missing"),
                inline(case["assessment"] or "-"),
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
    lines += [f"- Warning: {inline(w)}" for w in data["warnings"]]
    return "\n".join(lines).rstrip("\n") + "\n"
