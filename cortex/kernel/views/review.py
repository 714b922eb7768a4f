"""`cortex review`: whether the code of a branch is the code its cases verified.

The merge gate (docs/design/report.md, "The merge gate"): the commits of `base..head`, the
cases that claim them (their `Cortex-Case:` trailers, and the cases opened on the branch at
its fork point or after it), and each case judged by `assess` against the head commit as a
clean checkout, so a receipt counts exactly when the verified code is the code at `head`.

Read-only, and it never talks to a remote: CI fetches the cases first (`cortex case fetch
--pr N`). It runs verifiers only to reproduce (`--reproduce`, or a base that accepts only
reproduced proof), and never through MCP. Anything but `approve` is a refusal (exit 5) whose
`data` holds the whole verdict, as `audit` keeps its report.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from cortex.cases.bounds import SHARE_PR_CASES_MAX, SHARE_PR_COMMITS_MAX
from cortex.cases.documents import Decisions, Verification
from cortex.cases.errors import ArgumentError, CortexError, InvalidInputError, RefusedError
from cortex.cases.ids import is_id
from cortex.kernel.envelope import Data, Result
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel

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
    kernel: Kernel,
    *,
    base: str | None = None,
    head: str | None = None,
    fmt: str | None = None,
    accept: str | None = None,
    reproduce: bool = False,
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
    from cortex.kernel.views import gate

    base_config = gate.config_at(kernel, base_commit, "base")
    head_config = gate.config_at(kernel, head_commit, "head")
    rule = gate.policy(kernel, accept, reproduce=reproduce, base=base_config)
    commits = history.commits_between(root, env, base_commit, head_commit) or []
    tree = history.trees(root, env, [head_commit]).get(head_commit)
    branch = history.current_branch(root, env) if head_ref == "HEAD" else None
    branch = branch or history.branch_of(root, env, head_ref)
    warnings: list[str] = []
    claims, seen = _claims(kernel, commits, fork, branch, warnings)
    judge = Judge(
        kernel=kernel,
        live=history.commit_capture(root, head_commit, tree),
        level=rule["accept"],
        base=base_config,
        head=head_config,
        require=_required(kernel, base_config),
        head_commit=head_commit,
        tree=tree,
        fork=fork,
        changed=history.changed_between(root, env, fork, head_commit) or [],
    )
    cases = [judge.case(task_id, how) for task_id, how in claims.items()]
    warnings += list(dict.fromkeys(judge.warnings))
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
        "policy": rule,
        "cases": cases,
        "problems": problems,
        "redefined": judge.redefined,
        "seen": seen,
        "warnings": warnings,
        "format": fmt,
        "document": None,
    }
    from cortex.kernel.views.handoff.read import redact_all

    data = redact_all(data, kernel.redactor)
    if fmt == "md":
        from cortex.kernel.views.review_summary import markdown

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
) -> tuple[dict[str, list[str]], list[Data]]:
    """Task id -> how it claims the range (`trailer`, `branch`); and the other open cases seen.

    The commits' trailers name the cases judged; only a range without any trailer is judged
    by the cases opened on its branch. Every other case opened on the branch and still open is
    seen, never judged (docs/design/report.md, step 2).
    """
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
    on_branch: list[tuple[str, Any]] = []
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
                on_branch.append((task_id, case))
    trailers = bool(claims)
    seen: list[Data] = []
    for task_id, case in on_branch:
        if not trailers:
            claims.setdefault(task_id, []).append("branch")
        elif task_id not in claims and case.status != "complete":
            seen.append({"taskId": task_id, "phase": case.status, "goal": case.goal})
    if len(claims) > SHARE_PR_CASES_MAX:
        msg = f"{len(claims)} cases claim these commits, more than the {SHARE_PR_CASES_MAX} read"
        raise InvalidInputError(msg)
    return claims, seen


def _required(kernel: Kernel, base: Any) -> dict[str, str]:
    """What every case's plan must include: the base commit's list, then this machine's."""
    from cortex.kernel.config import global_review_require

    found = dict.fromkeys(base.require, "base branch")
    for name in global_review_require(kernel.env):
        found.setdefault(name, "global configuration")
    return found


class Judge:
    """Judges each claiming case against the head commit (steps 3 to 8 of the design)."""

    def __init__(
        self,
        *,
        kernel: Kernel,
        live: Any,
        level: str,
        base: Any,
        head: Any,
        require: dict[str, str],
        head_commit: str,
        tree: str | None,
        fork: str,
        changed: list[str],
    ) -> None:
        self.kernel = kernel
        self.changed = changed
        self.live = live
        self.level = level
        self.base = base
        self.head = head
        self.require = require
        """Each name every case's plan must include -> who requires it (base, global)."""
        self.head_commit = head_commit
        self.tree = tree
        self.fork = fork
        self.redefined: list[Data] = []
        self.warnings: list[str] = []

    def case(self, task_id: str, how: list[str]) -> Data:
        """One claiming case, with its problems."""
        from cortex.kernel.views import gate

        kernel = self.kernel
        store = self._store(task_id)
        entry: Data = {
            "taskId": task_id,
            "claimedBy": how,
            "goal": None,
            "phase": None,
            "assessment": None,
            "currency": None,
            "provenance": None,
            "reproduction": None,
            "problems": [],
        }
        problems: list[Data] = entry["problems"]
        if store is None:
            problems.append(
                {
                    "code": "case_missing",
                    "message": (
                        f"a Cortex-Case trailer names {task_id}, which this store does not "
                        f"hold: fetch it (cortex case fetch {task_id}, or --pr N)"
                    ),
                }
            )
            return entry
        integrity = gate.audit_problem(kernel, store, task_id)
        if integrity is not None:
            problems.append(integrity)
            return entry
        try:
            case, documents = store.read_view(task_id)
        except CortexError as exc:
            message = f"the case cannot be read: {exc.message}"
            problems.append({"code": "integrity", "message": message})
            return entry
        self._judge(entry, case, documents, store)
        return entry

    def _store(self, task_id: str) -> Any:
        """This workspace's store holding the case, or its archive (None: neither holds it).

        An archived case left the default views, not the proof. A case of another store is
        not this repository's: it stays `case_missing`.
        """
        import os

        from cortex.cases.retention import archive_root

        kernel = self.kernel
        if kernel.store.exists(task_id):
            return kernel.store
        try:
            _, found = kernel.find(task_id)
        except CortexError:
            return None
        archive = os.path.realpath(archive_root(kernel.cases_root))
        return found if os.path.realpath(found.root) == archive else None

    def _judge(self, entry: Data, case: Any, documents: dict[str, Any], store: Any) -> None:
        from cortex.cases.layout import REPLICAS_FILE
        from cortex.kernel.proof.assessment import assess
        from cortex.kernel.views import gate

        kernel = self.kernel
        problems: list[Data] = entry["problems"]
        verification: Verification | None = documents.get("verification.json")
        decisions: Decisions | None = documents.get("decisions.json")
        assessment = assess(case, verification, self.live)
        currency = assessment.currency.summary if assessment.currency is not None else None
        entry.update(
            goal=case.goal, phase=case.status, assessment=assessment.status, currency=currency
        )
        found = gate.provenance(store, case, verification, documents.get(REPLICAS_FILE))
        entry["provenance"] = found
        from cortex.kernel.views.claims import observed

        seen = observed(store, case, documents)
        if seen is not None:
            # Flags are for the reviewer to weigh: they never approve or refuse by themselves.
            entry["observed"] = seen
        if case.status != "complete":
            problems.append({"code": "not_complete", "message": f"the case is {case.status}"})
        reasons = "; ".join(assessment.reasons) or "nothing is current proof"
        if assessment.status == "failed":
            problems.append({"code": "failed", "message": reasons})
        elif assessment.status == "unverified":
            problems.append({"code": "no_proof", "message": reasons})
        elif assessment.status == "partial":
            problems.append({"code": "partial", "message": reasons})
        if assessment.acknowledged:
            # Counted as a pass, but the case's own word, not its verifier's: say so.
            required = [a for a in assessment.acknowledged if a.split()[0] in self.require]
            self.warnings.append(
                f"{case.id}: passed only by acknowledgement: {', '.join(assessment.acknowledged)}"
                " (the case accepted it on record; no verifier approved it)"
                + (", and [review] require names it" if required else "")
            )
        problems += _decision_problems(kernel, store, case, decisions)
        untrusted = gate.untrusted(found, self.level)
        if untrusted is not None and assessment.status != "unverified":
            problems.append(untrusted)
        self._definitions(entry, case, verification)
        if self.level == "reproduced" and not problems and verification is not None:
            if kernel.via == "mcp":
                # An agent's review reads; running the base's commands is the gate's act.
                message = (
                    "the policy accepts only reproduced proof and a review through MCP runs no "
                    "command: the merge gate runs cortex review --reproduce"
                )
                problems.append({"code": "not_reproduced", "message": message})
            else:
                self._reproduce(entry, case, verification)

    def _definitions(self, entry: Data, case: Any, verification: Verification | None) -> None:
        from cortex.kernel.views import gate

        task_id = case.id
        changed = gate.redefined(list(case.verification_required), self.base, self.head)
        known = {r["requirement"] for r in self.redefined}
        self.redefined += [r for r in changed if r["requirement"] not in known]
        differ, unknown = gate.receipt_definitions(verification, self.base)
        names = sorted({r["requirement"] for r in changed} | set(differ))
        if names:
            message = (
                f"{', '.join(names)}: the definition that ran is not the base branch's (the "
                "head commit or the run used another argv, timeout or kind)"
            )
            if self.level == "reproduced":
                self.warnings.append(
                    f"{task_id}: {message}; the reproduction used the base branch's definition"
                )
            else:
                entry["problems"].append({"code": "verifier_redefined", "message": message})
        if unknown:
            self.warnings.append(
                f"{task_id}: {unknown} receipt(s) record no verifier definition (written before "
                "it was recorded); only the base and head definitions were compared"
            )
        required = list(case.verification_required)
        left_out = [name for name in self.require if name not in required]
        if left_out:
            # The base branch (and this machine's gate), not the case's own plan, say what must
            # have run.
            named = ", ".join(f"{name} ({self.require[name]})" for name in left_out)
            entry["problems"].append(
                {
                    "code": "required_missing",
                    "message": (
                        f"[review] require names {named}, which the case's plan leaves out: "
                        f"cortex case plan {task_id} --verify {left_out[0]}, then verify"
                    ),
                }
            )
        self.warnings += [
            f"{task_id}: {w}" for w in gate.own_files(required, self.base, self.changed)
        ]
        if required and all(name == "scope" for name in required):
            self.warnings.append(
                f"{task_id}: its plan requires only scope, which checks which files changed, "
                "not what the code does: no verifier ran the code"
            )

    def _reproduce(self, entry: Data, case: Any, verification: Verification) -> None:
        from cortex.kernel.views.reproduce import reproduce

        result = reproduce(
            self.kernel,
            case,
            verification,
            head=self.head_commit,
            tree=self.tree,
            fork=self.fork,
            base=self.base,
        )
        entry["reproduction"] = result
        entry["provenance"]["reproduced"] = result["ok"]
        if result["ok"]:
            return
        shown = (
            ", ".join(
                f"{r['requirement']} {r['status']}"
                + ("" if r["status"] == "passed" else f" ({r['summary']})")
                for r in result["runs"]
            )
            or "nothing ran"
        )
        claims = [c for c in result["claims"] if c["status"] != "passed"]
        if claims:
            shown += "; claims not passed: " + ", ".join(str(c["claimId"]) for c in claims)
        if result["reason"]:
            shown = result["reason"]
        code = "failed" if result["failed"] else "not_reproduced"
        entry["problems"].append(
            {"code": code, "message": f"reproduced on the head commit: {shown}"}
        )


def _decision_problems(
    kernel: Kernel, store: Any, case: Any, decisions: Decisions | None
) -> list[Data]:
    problems: list[Data] = []
    items = decisions.decisions if decisions else []
    pending = [d.id for d in items if d.status == "pending"]
    if pending:
        problems.append(
            {"code": "pending_decision", "message": f"waiting for a person: {', '.join(pending)}"}
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
    return problems


def _summary(verdict: str, cases: list[Data], problems: list[Data]) -> str:
    if verdict == "approve":
        return (
            f"approve: {len(cases)} case(s) complete, each with proof current for the head "
            "commit's tree, from an origin the policy accepts"
        )
    first = problems[0]
    where = f"{first['taskId']}: " if first.get("taskId") else ""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{verdict}: {where}{first['code']}: {first['message']}{more}"


class Review(Input):
    """The input of `review`.

    `format`, `accept` and `reproduce` are the gate's own: set by who runs it, never by the
    agent judged, so the MCP server publishes none of them.
    """

    base: Annotated[
        str | None,
        msgspec.Meta(description="the branch the commits merge into (default: origin/HEAD, main "
                     "or master)"),
    ] = None  # fmt: skip
    head: Annotated[
        str | None, msgspec.Meta(description="the commit under review (default: HEAD)")
    ] = None
    reproduce: bool = False
    accept: str | None = None
    format: str | None = None


def review_branch(kernel: Kernel, given: Review) -> Result:
    """`review` for one input."""
    return review(
        kernel,
        base=given.base,
        head=given.head,
        fmt=given.format,
        accept=given.accept,
        reproduce=given.reproduce,
    )
