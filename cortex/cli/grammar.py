"""The CLI's grammar: every command, its words, positionals and options, as one table.

Long because: one declarative table of every command (about 55), read top to bottom; its types
and shared options sit above it. `cortex.cli.parser` parses a command line against it and draws
`--help` from it, `cortex.cli.completion` completes from it, and tests/test_parity.py checks it
against the use cases' input structs.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from cortex.kernel import inputs

Kind = Literal["value", "flag", "repeat"]


class Opt(msgspec.Struct, frozen=True):
    """One option of a command."""

    name: str
    help: str
    kind: Kind = "value"
    metavar: str = "VALUE"
    default: object = None
    integer: bool = False
    required: bool = False
    short: str | None = None

    @property
    def dest(self) -> str:
        """The key the value is stored under."""
        return self.name.lstrip("-").replace("-", "_")


class Cmd(msgspec.Struct, frozen=True):
    """One leaf command: its words, positional arguments and options."""

    words: tuple[str, ...]
    help: str
    positionals: tuple[tuple[str, str], ...] = ()
    options: tuple[Opt, ...] = ()
    optional: int = 0
    """How many trailing positionals may be left out (they are then None)."""
    variadic: bool = False
    """The last positional takes one or more values (a list): `recall get ID...`."""

    @property
    def name(self) -> str:
        """The dotted name used in envelopes and audit lines (`case.evidence.add`)."""
        return ".".join(self.words)


GLOBAL = (
    Opt("--json", "print exactly one JSON envelope on stdout", kind="flag"),
    Opt("--workspace", "run as if started in DIR", metavar="DIR", short="-C"),
    Opt("--quiet", "no live progress line at a terminal", kind="flag"),
)
"""Options every command accepts, before or after the command words."""

_ACTOR = Opt("--actor", "who is acting (default: $CORTEX_ACTOR, else cli)", metavar="NAME")
_EXPECT = Opt(
    "--expect-revision",
    "fail with exit 6 unless the case is still at revision N",
    metavar="N",
    integer=True,
)
_TASK = ("task", "task id (task_...), a unique prefix of one (task_ and 4 or more), or @latest")
_ORIGIN = Opt("--origin", inputs.one_of(inputs.ORIGINS), default=inputs.ORIGIN)

_REASON = Opt("--reason", "why", metavar="TEXT", required=True)
_CONTESTS = Opt(
    "--contests",
    "dispute this answered decision; both are [contested] until a person resolves it",
    metavar="DEC",
)
_HOLDER = Opt("--actor", "who holds the lease (default: $CORTEX_ACTOR, else cli)", metavar="NAME")
_TTL = Opt(
    "--ttl", "how long the lease lasts: 90s, 15m, 1h (1 s to 1 h; default 15m)", metavar="DURATION"
)
_LEASE_TOKEN = Opt(
    "--lease-token",
    "the token begin-change returned when it took the lease (default: $CORTEX_LEASE_TOKEN)",
    metavar="TOKEN",
)

COMMANDS: tuple[Cmd, ...] = (
    Cmd(
        ("case", "open"),
        "open a case for a goal",
        positionals=(("goal", "what the task should achieve"),),
        options=(
            Opt(
                "--mode",
                f"{inputs.one_of(inputs.MODES)}; {inputs.MODE_HELP}",
                default=inputs.MODE,
            ),
            Opt("--risk", inputs.one_of(inputs.RISKS), default=inputs.RISK),
            Opt("--surface", inputs.one_of(inputs.SURFACES), kind="repeat"),
            Opt("--criterion", "an acceptance criterion", kind="repeat", metavar="ID=STATEMENT"),
            Opt(
                "--idempotency-key",
                "a retry with the same key returns the same case",
                metavar="KEY",
            ),
            Opt("--parent", "open as a child of this case", metavar="TASK"),
            _ACTOR,
            Opt("--no-recall", "leave out the brief of what earlier cases learned", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "list"),
        "cases in this workspace's store, newest first",
        options=(
            Opt("--limit", "at most N cases", metavar="N", default=inputs.LIST_LIMIT, integer=True),
            Opt("--archived", "the archived cases instead", kind="flag"),
        ),
    ),
    Cmd(("case", "status"), "where a case stands and what can be done next", positionals=(_TASK,)),
    Cmd(
        ("case", "show"),
        "one screen for a person: phases, plan, proof, decision, lease, recent activity",
        positionals=(_TASK,),
    ),
    Cmd(
        ("case", "evidence", "add"),
        "append one piece of evidence",
        positionals=(_TASK,),
        options=(
            Opt("--claim", "what the evidence shows", metavar="TEXT", required=True),
            Opt(
                "--kind",
                f"evidence kind: {inputs.one_of(inputs.EVIDENCE_KINDS)}",
                default=inputs.EVIDENCE_KIND,
            ),
            Opt(
                "--source",
                "the tool that produced it",
                metavar="TOOL",
                default=inputs.EVIDENCE_SOURCE,
            ),
            Opt("--uri", "where the source can be found", metavar="URI"),
            _ORIGIN,
            Opt("--file", "repository-relative file", metavar="PATH"),
            Opt("--line", "line or line range", metavar="N[-M]"),
            Opt("--symbol", "symbol the claim is about", metavar="NAME"),
            Opt(
                "--confidence",
                inputs.one_of(inputs.CONFIDENCES),
                default=inputs.CONFIDENCE,
            ),
            Opt("--sensitive", "mark the record sensitive", kind="flag"),
            Opt("--raw-file", "raw tool output to keep ('-' reads stdin)", metavar="PATH"),
            Opt(
                "--raw-dir",
                "a directory of raw output to keep (at most 100 files; symlinks skipped)",
                metavar="DIR",
            ),
            Opt("--derived-from", "evidence this builds on", kind="repeat", metavar="EV_ID"),
            _ACTOR,
            _EXPECT,
            _CONTESTS,
        ),
    ),
    Cmd(
        ("case", "note"),
        "add a free-text note to a case",
        positionals=(_TASK, ("text", "the note")),
        options=(_ORIGIN, _ACTOR, _EXPECT, _CONTESTS),
    ),
    Cmd(
        ("case", "read-evidence"),
        "print one evidence record in full",
        positionals=(_TASK, ("evidence", "evidence id (ev_...) or a unique prefix of one")),
    ),
    Cmd(
        ("case", "read-artifact"),
        "a bounded, redacted preview of raw output the case cites",
        positionals=(_TASK, ("ref", "case://<task>/raw/<raw id>")),
        options=(
            Opt(
                "--max-bytes",
                "at most N bytes (at most 131072)",
                metavar="N",
                default=inputs.PREVIEW_BYTES,
                integer=True,
            ),
            Opt("--allow-binary", "return binary output as base64 (marked sensitive)", kind="flag"),
            Opt(
                "--path",
                "a file inside a directory artifact (without it: the artifact's listing)",
                metavar="PATH",
            ),
        ),
    ),
    Cmd(
        ("case", "plan"),
        "commit a plan: hypotheses, boundary, verifiers, uncertainty",
        positionals=(_TASK,),
        options=(
            Opt(
                "--hypothesis",
                "'statement :: how to disprove it'",
                kind="repeat",
                metavar="TEXT",
            ),
            Opt("--support", "evidence behind hypothesis N", kind="repeat", metavar="N=EV,..."),
            Opt(
                "--file",
                "a file the change may touch (a trailing / covers a directory)",
                kind="repeat",
                metavar="PATH",
            ),
            Opt("--symbol", "a symbol the change may touch", kind="repeat", metavar="NAME"),
            Opt("--boundary-reason", "why the change stays within that boundary", metavar="TEXT"),
            Opt(
                "--verify",
                "a verifier that must pass (pytest, command:NAME, ...)",
                kind="repeat",
                metavar="NAME",
            ),
            Opt("--uncertainty", "what is still unknown", metavar="TEXT"),
            Opt("--reason", "why the plan changes (required to re-plan)", metavar="TEXT"),
            _ACTOR,
            _EXPECT,
            _LEASE_TOKEN,
        ),
    ),
    Cmd(
        ("case", "resolve"),
        "confirm, challenge or reject a hypothesis",
        positionals=(_TASK, ("hypothesis", "hypothesis id (hyp_...) or a unique prefix of one")),
        options=(
            Opt("--status", "confirmed|challenged|rejected", required=True),
            _REASON,
            Opt("--evidence", "evidence for the resolution", kind="repeat", metavar="EV_ID"),
            _ACTOR,
            _EXPECT,
        ),
    ),
    Cmd(
        ("case", "begin-change"),
        "take the change lease and start changing",
        positionals=(_TASK,),
        options=(_HOLDER, _TTL, _LEASE_TOKEN),
    ),
    Cmd(
        ("case", "lease", "renew"),
        "extend your change lease",
        positionals=(_TASK,),
        options=(_HOLDER, _TTL, _LEASE_TOKEN),
    ),
    Cmd(
        ("case", "lease", "release"),
        "give your change lease up",
        positionals=(_TASK,),
        options=(_HOLDER, _LEASE_TOKEN),
    ),
    Cmd(
        ("case", "decision", "request"),
        "ask a person a bounded question; the case waits for the answer",
        positionals=(_TASK,),
        options=(
            Opt("--question", "the question", metavar="TEXT", required=True),
            Opt("--option", "an answer (2 to 16)", kind="repeat", metavar="ID=LABEL|CONSEQUENCE"),
            _ACTOR,
            Opt(
                "--subject",
                "what it decides; a later decision on the subject supersedes it",
                metavar="TEXT",
            ),
        ),
    ),
    Cmd(
        ("case", "decision", "answer"),
        "answer a pending decision: a person, at a terminal (it asks for the option id)",
        positionals=(_TASK, ("decision", "decision id (dec_...) or a unique prefix of one")),
        options=(
            Opt("--answer", "the chosen option id", metavar="OPTION", required=True),
            Opt("--responder", "who answers", metavar="NAME", required=True),
        ),
    ),
    Cmd(("case", "decision", "list"), "the decisions of a case", positionals=(_TASK,)),
    Cmd(
        ("case", "block"),
        "put a case that cannot go on now on hold (unblock resumes it)",
        positionals=(_TASK,),
        options=(_REASON, _ACTOR, _LEASE_TOKEN),
    ),
    Cmd(
        ("case", "abort"),
        "abandon a case; nothing is deleted (terminal)",
        positionals=(_TASK,),
        options=(_REASON, _ACTOR, _LEASE_TOKEN),
    ),
    Cmd(("case", "audit"), "check a case's integrity (read-only)", positionals=(_TASK,)),
    Cmd(("serve",), "run the MCP server over stdin/stdout (agent hosts start it)"),
    Cmd(("config",), "the configuration in force here, and where each value came from"),
    Cmd(("doctor",), "read-only checks of git, configuration, store and locks; exit 1 on failure"),
    Cmd(
        ("init",),
        "detect the test runner and write a starter verifier to cortex.toml",
        options=(
            Opt(
                "--force", "replace verifiers of the same name (rewrites cortex.toml)", kind="flag"
            ),
            Opt("--pyproject", "write [tool.cortex.verifiers.*] to pyproject.toml", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "verify"),
        "run the plan's verifiers once; receipts are bound to the code they ran on",
        positionals=(_TASK,),
        options=(
            Opt("--claim", "a named claim to prove", kind="repeat", metavar="ID=STATEMENT"),
            Opt(
                "--contract",
                "the verifier run a claim rests on",
                kind="repeat",
                metavar="ID=REQUIREMENT[#SELECTOR]",
            ),
            Opt("--ack-drift", "accept changes outside the plan's boundary", kind="flag"),
            Opt("--no-op", "the change task needed no change", kind="flag"),
            Opt("--actor", "who verifies (default: the lease holder)", metavar="NAME"),
            Opt(
                "--follow",
                "show each verifier's output as it runs (redacted as it is stored)",
                kind="flag",
            ),
            _LEASE_TOKEN,
        ),
    ),
    Cmd(
        ("case", "complete"),
        "finish a verified case (or acknowledge why it is not)",
        positionals=(_TASK,),
        options=(
            Opt("--outcome", "what was done", metavar="TEXT", required=True),
            Opt("--accept-failed", "complete although verification failed", metavar="REASON"),
            Opt(
                "--verification-not-possible",
                "complete although nothing is (fully) proven",
                metavar="REASON",
            ),
            Opt("--actor", "who completes (default: the lease holder)", metavar="NAME"),
            _LEASE_TOKEN,
        ),
    ),
    Cmd(
        ("case", "attest"),
        "the latest bound batch as an in-toto Statement (read-only)",
        positionals=(_TASK,),
    ),
    Cmd(
        ("case", "trust"),
        "approve a configured command verifier for this workspace (asks at the terminal)",
        positionals=(("name", "the verifier name ([verifiers.NAME], or pytest)"),),
        options=(Opt("--revoke", "withdraw the approval", kind="flag"),),
    ),
    Cmd(
        ("setup", "claude"),
        "register Cortex's MCP server and hooks with Claude Code",
        options=(
            Opt(
                "--scope",
                "project (default): .mcp.json and .claude/settings.json; user: ~/.claude.json "
                "and ~/.claude/settings.json",
                metavar="user|project",
            ),
            Opt("--dry-run", "write nothing; show what would change", kind="flag"),
            Opt("--remove", "take out what setup put in (server entry and hooks)", kind="flag"),
            Opt("--plugin", "write a Claude Code plugin into DIR instead", metavar="DIR"),
        ),
    ),
    Cmd(
        ("setup", "codex"),
        "register Cortex's MCP server and hooks with the Codex CLI",
        options=(
            Opt(
                "--scope",
                "user (default): $CODEX_HOME/config.toml and hooks.json; project: .codex/",
                metavar="user|project",
            ),
            Opt("--dry-run", "write nothing; show what would change", kind="flag"),
            Opt("--remove", "take out what setup put in (server entry and hooks)", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "timeline"),
        "a case's history, one entry per event, oldest first (read-only)",
        positionals=(_TASK,),
        options=(
            Opt(
                "--kind",
                "only entries of this kind: phase|evidence|command|decision|receipt|batch|activity",
                kind="repeat",
                metavar="KIND",
            ),
            Opt("--actor", "only entries by this actor", metavar="NAME"),
            Opt("--since", "only entries at or after this ISO date or time (UTC)", metavar="WHEN"),
            Opt(
                "--until",
                "only entries at or before this ISO date or time (a date covers its whole day)",
                metavar="WHEN",
            ),
            Opt(
                "--limit",
                "entries per page (at most 500)",
                metavar="N",
                default=inputs.TIMELINE_LIMIT,
                integer=True,
            ),
            Opt("--cursor", "the next page: the token the previous page printed", metavar="TOKEN"),
            Opt(
                "--anchor",
                "center on an entry id, or on the first entry at or after a date",
                metavar="ID|DATE",
            ),
            Opt("--before", "entries before the anchor (default 10)", metavar="N", integer=True),
            Opt("--after", "entries after the anchor (default 10)", metavar="N", integer=True),
        ),
    ),
    Cmd(
        ("case", "handoff"),
        "a bounded transfer packet for the next agent or a reviewer (read-only)",
        positionals=(_TASK,),
        options=(
            Opt("--compact", "start at a smaller tier: evidence as titles only", kind="flag"),
            Opt(
                "--output",
                "also write the packet to FILE, atomically (not inside the case store)",
                metavar="FILE",
                short="-o",
            ),
            Opt("--format", "what -o writes: markdown (default) or json", metavar="markdown|json"),
        ),
    ),
    Cmd(
        ("case", "metrics"),
        "a case in numbers: time per phase, commands, evidence, coverage (read-only)",
        positionals=(("task", "task id (task_...); without it, this workspace's store summed"),),
        optional=1,
    ),
    Cmd(
        ("case", "sessions"),
        "every case under the state root, newest update first (read-only)",
        options=(
            Opt("--repo", "only cases of this repository or store", metavar="NAME"),
            Opt("--active", "only cases that are not closed", kind="flag"),
            Opt(
                "--stale-after",
                "only active cases not updated for this long: 90s, 15m, 24h, 7d",
                metavar="DURATION",
            ),
            Opt("--query", "only cases whose goal or id contains TEXT (any case)", metavar="TEXT"),
            Opt(
                "--limit",
                "at most N cases (at most 500)",
                metavar="N",
                default=inputs.SESSIONS_LIMIT,
                integer=True,
            ),
            Opt("--archived", "the archived cases instead", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "overview"),
        "totals across every store: phases, completion and verified-completion rates (read-only)",
    ),
    Cmd(
        ("studio",),
        "a live board of every case, with a detail pane; answers pending decisions",
        options=(
            Opt(
                "--refresh",
                "seconds between two refreshes (default 2, from 0.5 to 60)",
                metavar="SECONDS",
            ),
            Opt("--active", "only cases that are not closed (f toggles it)", kind="flag"),
            Opt("--repo", "only cases of this repository or store", metavar="NAME"),
            Opt(
                "--query", "only cases whose goal or id contains TEXT (/ edits it)", metavar="TEXT"
            ),
        ),
    ),
    Cmd(
        ("case", "unblock"),
        "return a blocked case to the phase it was blocked in",
        positionals=(_TASK,),
        options=(_REASON, _ACTOR, _LEASE_TOKEN),
    ),
    Cmd(
        ("completion",),
        "print a shell completion script; task ids complete with their goals",
        positionals=(("shell", "bash, zsh or fish"),),
        options=(
            Opt(
                "--line",
                "the candidates for the last word of this command line (what the scripts ask)",
                metavar="TEXT",
            ),
        ),
    ),
    Cmd(
        ("recall",),
        "cards of what earlier cases learned, best match first (read-only; see also "
        "recall get, recall reindex, recall rebuild)",
        positionals=(("query", "words to look for (letters and digits; no query syntax)"),),
        options=(
            Opt("--repo", "only cards of this repository or store", metavar="NAME"),
            Opt(
                "--kind",
                "only cards of this kind: hypothesis|decision|outcome|evidence",
                kind="repeat",
                metavar="KIND",
            ),
            Opt(
                "--status",
                "only cards with this status: rejected|confirmed|active|superseded|overturned|"
                "verified|partial|failed|unverified|notable|contest|resolution",
                kind="repeat",
                metavar="STATUS",
            ),
            Opt("--since", "only cards created at or after this ISO date or time", metavar="WHEN"),
            Opt(
                "--until",
                "only cards created at or before this ISO date or time (a date: its whole day)",
                metavar="WHEN",
            ),
            Opt(
                "--limit",
                "cards per page (at most 100)",
                metavar="N",
                default=inputs.RECALL_LIMIT,
                integer=True,
            ),
            Opt("--cursor", "the next page: the token the previous page printed", metavar="TOKEN"),
            Opt(
                "--budget",
                "keep cards within this many estimated tokens (the top card always)",
                metavar="TOKENS",
                integer=True,
            ),
        ),
    ),
    Cmd(
        ("recall", "get"),
        "the full records of named cards, all or none (read-only)",
        positionals=(("id", "card ids (hyp_, dec_, ev_, task_), at most 100"),),
        variadic=True,
    ),
    Cmd(("recall", "reindex"), "bring the recall index up to date with the case files"),
    Cmd(
        ("recall", "rebuild"),
        "derive the whole recall index again from the case files",
        options=(
            Opt("--verify", "compare the digests of the case files and the index", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "decision", "resolve"),
        "settle the contests of a decision (for people: asks at the terminal)",
        positionals=(_TASK, ("decision", "decision id (dec_...)")),
        options=(
            Opt("--outcome", "upheld|overturned", metavar="OUTCOME", required=True),
            _REASON,
            Opt("--responder", "who resolves", metavar="NAME", required=True),
        ),
    ),
    Cmd(
        ("case", "share"),
        "export a case to refs/cortex/cases/<id> and push it (never forced)",
        positionals=(("task", "task id (task_...); or --all"),),
        optional=1,
        options=(
            Opt("--all", "every case of this workspace's store", kind="flag"),
            Opt("--remote", "the git remote (default: [share] remote, else origin)", metavar="R"),
            Opt("--dry-run", "send nothing; print the manifest of what would leave", kind="flag"),
        ),
    ),
    Cmd(
        ("case", "fetch"),
        "fetch shared cases and import them beside the local records",
        positionals=(("task", "task id (task_...); or --pr, --bundle, --all"),),
        optional=1,
        options=(
            Opt(
                "--pr",
                "the cases a pull request's Cortex-Case trailers name",
                metavar="N",
                integer=True,
            ),
            Opt("--bundle", "a bundle file made by `cortex case bundle`", metavar="FILE"),
            Opt("--all", "every case the remote holds (the newest 500)", kind="flag"),
            Opt("--remote", "the git remote (default: [share] remote, else origin)", metavar="R"),
            Opt(
                "--base",
                "the branch a --pr merges into (default: the remote's HEAD)",
                metavar="BRANCH",
            ),
        ),
    ),
    Cmd(
        ("case", "bundle"),
        "write a case to a verified git bundle (for hosts that refuse case refs)",
        positionals=(_TASK,),
        options=(
            Opt("--output", "the bundle file to write", metavar="FILE", short="-o", required=True),
        ),
    ),
    Cmd(
        ("case", "trailer"),
        "the Cortex-Case commit trailer of each case whose change lease is active (read-only)",
        options=(
            Opt("--actor", "only leases held by NAME (default: $CORTEX_ACTOR)", metavar="NAME"),
        ),
    ),
    Cmd(
        ("setup", "git-trailer"),
        "install a prepare-commit-msg hook adding the Cortex-Case trailer",
        options=(Opt("--dry-run", "write nothing; show what would change", kind="flag"),),
    ),
    Cmd(
        ("case", "report"),
        "a reviewer's page: one self-contained HTML file, or Markdown (read-only)",
        positionals=(_TASK,),
        options=(
            Opt(
                "--html",
                "write the HTML report to FILE (the same as --format html -o FILE)",
                metavar="FILE",
            ),
            Opt(
                "--output",
                "write to FILE, atomically (default: stdout; not inside the case store)",
                metavar="FILE",
                short="-o",
            ),
            Opt("--format", "html (default) or md", metavar="html|md"),
            Opt(
                "--comment",
                "Markdown within a pull-request comment (at most 64 KiB)",
                kind="flag",
            ),
            Opt(
                "--max-bytes",
                "the size cap (default 1 MiB for HTML, 1,000,000 for Markdown, 64 KiB for "
                "--comment); evidence and the timeline are cut first",
                metavar="N",
                integer=True,
            ),
            Opt(
                "--generated-at",
                "the time the report says it was made (default: the case's last change)",
                metavar="TIME",
            ),
            Opt(
                "--full-audit",
                "run the full audit whatever the case's size (default: up to 2,000 ledger lines)",
                kind="flag",
            ),
        ),
    ),
    Cmd(
        ("case", "archive"),
        "move a closed case out of the default views and the recall corpus (unarchive: back)",
        positionals=(_TASK,),
        options=(_ACTOR,),
    ),
    Cmd(
        ("case", "unarchive"),
        "bring an archived case back",
        positionals=(_TASK,),
        options=(_ACTOR,),
    ),
    Cmd(
        ("case", "prune"),
        "abandon and archive cases idle longer than an age (a dry run unless --apply)",
        options=(
            Opt(
                "--older-than",
                "idle at least this long: 12h, 30d (default: prune_older_than, else 30d)",
                metavar="DURATION",
            ),
            Opt("--apply", "abandon and archive them", kind="flag"),
            _ACTOR,
        ),
    ),
    Cmd(
        ("case", "rm"),
        "delete a closed case, its recall cards and local refs (a dry run unless --force; "
        "asks at the terminal)",
        positionals=(_TASK,),
        options=(Opt("--force", "remove it (a person at a terminal types the id)", kind="flag"),),
    ),
    Cmd(
        ("adopt",),
        "take back the cases a moved or renamed repository left in its old store",
        positionals=(
            ("store", "an orphaned store's id (default: those holding this repository's commits)"),
        ),
        optional=1,
        options=(Opt("--dry-run", "write nothing; show what would move", kind="flag"),),
    ),
    Cmd(
        ("recall", "drop"),
        "delete the recall index and the git index mirrors; both are made again when needed",
        options=(Opt("--dry-run", "delete nothing; list what would go", kind="flag"),),
    ),
    Cmd(
        ("case", "forget"),
        "replace one record, or its raw output, by a tombstone: its text leaves every file "
        "(for people: asks at the terminal)",
        positionals=(_TASK, ("id", "the whole id of the record (ev_...) or raw output (raw_...)")),
        options=(_REASON, _ACTOR),
    ),
    Cmd(
        ("review",),
        "approve a branch, or say what its cases lack: integrity, proof current for the head's "
        "tree from an origin the policy accepts, completion, decisions (exit 5 unless approved)",
        options=(
            Opt(
                "--base",
                "the branch the commits merge into (default: origin/HEAD, main or master)",
                metavar="REF",
            ),
            Opt("--head", "the commit under review (default: HEAD)", metavar="REF"),
            Opt(
                "--reproduce",
                "run each case's required verifiers again on a clean checkout of the head "
                "commit, as the base commit defines them; approve only what passed",
                kind="flag",
            ),
            Opt(
                "--accept",
                "the origins of proof approved: reproduced, local (default), remote or any "
                "(default: [review] accept of the base commit)",
                metavar="LEVEL",
            ),
            Opt(
                "--format",
                "text (default), or md: a Markdown summary for $GITHUB_STEP_SUMMARY",
                metavar="text|md",
            ),
        ),
    ),
)

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("open", ("case.open",)),
    ("investigate", ("case.evidence.add", "case.note", "case.resolve")),
    ("plan", ("case.plan",)),
    ("change", ("case.begin-change", "case.lease.renew", "case.lease.release")),
    ("verify", ("case.verify", "case.trust")),
    (
        "decide",
        (
            "case.decision.request",
            "case.decision.answer",
            "case.decision.list",
            "case.decision.resolve",
        ),
    ),
    ("finish", ("case.complete", "case.block", "case.unblock", "case.abort")),
    (
        "keep",
        ("case.archive", "case.unarchive", "case.prune", "case.rm", "case.forget", "adopt"),
    ),
    (
        "read",
        (
            "case.status",
            "case.show",
            "case.list",
            "case.read-evidence",
            "case.read-artifact",
            "case.timeline",
            "case.handoff",
            "case.attest",
            "case.audit",
            "case.metrics",
            "case.sessions",
            "case.overview",
            "studio",
        ),
    ),
    ("recall", ("recall", "recall.get", "recall.reindex", "recall.rebuild", "recall.drop")),
    ("share", ("case.share", "case.fetch", "case.bundle", "case.trailer")),
    ("review", ("case.report", "review")),
    (
        "set up",
        (
            "init",
            "config",
            "doctor",
            "setup.claude",
            "setup.codex",
            "setup.git-trailer",
            "serve",
            "completion",
        ),
    ),
)
"""How `--help` lists the commands: by where in a case's life each is used. A command not named
here is listed under "other" (so none is ever left out of the help)."""
