"""Every size and count limit Cortex enforces, in one place.

Limits are refusal thresholds, not targets: input over a limit is refused with `invalid_input`
(exit 4) before anything is written, and a file over a limit is reported as corrupt rather than
read into memory. `docs/bounds.md` documents each constant; a test keeps the two in step.
Text limits count UTF-8 bytes.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

# Files.
LEDGER_RECORD_MAX = 256 * KIB
"""One ledger line, as encoded (including its revision and chain hash)."""
SNAPSHOT_MAX = 16 * MIB
"""One JSON snapshot such as case.json."""
RAW_BLOB_MAX = 16 * MIB
"""One raw blob (a `--raw-file` or stdin), before redaction."""
JOURNAL_MAX = 1 * MIB
"""The multi-file commit journal (it lists names and lengths, never contents)."""
LOCK_INFO_MAX = 4 * KIB
"""Holder metadata read back from a lock file for a `busy` message."""

# Free text.
GOAL_MAX = 4 * KIB
CLAIM_MAX = 16 * KIB
NOTE_MAX = 16 * KIB
CRITERION_STATEMENT_MAX = 4 * KIB
SYMBOL_MAX = 1 * KIB
URI_MAX = 4 * KIB
LOCATION_PATH_MAX = 1 * KIB

# Identifiers chosen by callers.
IDENTIFIER_MAX = 256
"""Actor names, idempotency keys, tool names."""
CRITERION_ID_MAX = 128

# The lifecycle.
HYPOTHESES_MAX = 64
HYPOTHESIS_TEXT_MAX = 4 * KIB
"""A hypothesis's statement, and its disproof path."""
SUPPORTS_MAX = 64
"""Evidence ids supporting one hypothesis, and cited by one resolution."""
BOUNDARY_ENTRIES_MAX = 512
"""Files plus symbols in a change boundary."""
VERIFIERS_MAX = 32
REASON_MAX = 4 * KIB
"""Re-plan, resolution, block and abort reasons; the plan's uncertainty statement."""
QUESTION_MAX = 16 * KIB
OPTIONS_MIN = 2
OPTIONS_MAX = 16
OPTION_LABEL_MAX = 1 * KIB
OPTION_CONSEQUENCE_MAX = 4 * KIB
DECISIONS_MAX = 256
"""Decisions one case may ask over its life."""
LEASE_TTL_MIN = 1
LEASE_TTL_MAX = 3600
LEASE_TTL_DEFAULT = 900
"""Seconds: a change lease lasts 15 minutes unless renewed."""

# Configuration.
CONFIG_FILE_MAX = 1 * MIB
HOST_CONFIG_MAX = 64 * MIB
"""An agent host's own configuration (`~/.claude.json` also keeps per-project history)."""
REDACT_LITERALS_MAX = 256
REDACT_LITERAL_MIN = 4
"""Shorter literals would mangle ordinary text."""
REDACT_LITERAL_MAX = 4 * KIB

# Counts.
CRITERIA_MAX = 64
SURFACES_MAX = 16
DERIVED_FROM_MAX = 64
LINE_NUMBER_MAX = 10_000_000
LIST_LIMIT_MAX = 1000
INTEGER_DIGITS_MAX = 18
"""Digits of an integer a caller gives (a CLI option, an MCP argument, a JSON number), counted
before it is converted: 18 always fits a signed 64-bit integer, and Python refuses (or, with its
limit lifted, takes quadratic time) to convert past 4,300."""
LIST_LIMIT_DEFAULT = 50

# Waiting.
LOCK_TIMEOUT_DEFAULT = 10.0
"""Seconds a writer waits for a case lock before failing with `busy`."""
LOCK_TIMEOUT_MAX = 600.0

# Verification.
VERIFIER_TIMEOUT_DEFAULT = 120.0
"""Seconds a command verifier may run before its process group is killed."""
VERIFIER_TIMEOUT_MAX = 3600.0
CONFIG_VERIFIERS_MAX = 64
ARGV_MAX = 256
ARGV_ITEM_MAX = 4 * KIB
OUTPUT_HEAD = 8 * KIB
"""Bytes kept from the start of a verifier's stdout (and, separately, its stderr)."""
OUTPUT_TAIL = 24 * KIB
"""Bytes kept from the end of each stream: the end of a run says what failed."""
JUNIT_MAX = 16 * MIB
FAILING_TESTS_MAX = 100
FAILING_SHOWN = 20
"""Names of what failed (test ids, files outside the boundary) a receipt keeps; the total stays
exact, and verify and status show these with a count of the rest."""
CLAIMS_MAX = 64
CLAIM_STATEMENT_MAX = 4 * KIB
CLAIM_ID_MAX = 128
CONTRACT_MAX = 1 * KIB
BATCHES_KEPT = 64
"""Batches verification.json keeps; older runs stay in the evidence ledger."""
OUTCOME_MAX = 16 * KIB
GRANTS_FILE_MAX = 1 * MIB
GRANTS_MAX = 1024
SUMMARY_MAX = 1 * KIB
"""A verifier's one-line summary, and each of its notes (longer ones are cut)."""
NOTES_MAX = 20
"""Notes, findings and detail counts kept from one verifier run."""
CONTRACTS_MAX = 10_000
"""Per-selector results kept from one verifier run (test ids, for pytest)."""
CLAIM_REGISTRY_MAX = 1024
"""Distinct named-claim ids one case may use over its life."""
PREVIEW_DEFAULT = 32 * KIB
"""Bytes of an artifact `read-artifact` returns unless asked for fewer or more."""
PREVIEW_MAX = 128 * KIB

# Tree artifacts (`evidence add --raw-dir`, docs/design/artifacts.md).
TREE_WALK_MAX = 512
"""Directory entries a `--raw-dir` capture looks at, at most (symlinks and skips included)."""
TREE_FILES_MAX = 100
"""Regular files one tree artifact keeps, and its listing returns."""
TREE_BYTES_MAX = 32 * MIB
"""All members of one tree together, before redaction."""
TREE_PATH_MAX = 512
"""Bytes of a member's relative path (and of a `read-artifact --path`)."""
TREE_DEPTH_MAX = 16
"""Components of a member's relative path."""

# The timeline (`cortex case timeline`).
TIMELINE_LIMIT_DEFAULT = 50
"""Entries one timeline page returns unless asked for fewer or more."""
TIMELINE_LIMIT_MAX = 500
TIMELINE_AROUND_DEFAULT = 10
"""Entries shown on each side of an `--anchor` unless `--before`/`--after` say otherwise."""
TIMELINE_AROUND_MAX = 250
TIMELINE_TITLE_MAX = 240
"""Characters of an entry's one-line title (longer text is cut at a word, with an ellipsis)."""
TIMELINE_CURSOR_MAX = 1024
"""Characters of a `--cursor` token (the ones Cortex issues are far shorter)."""
TIMELINE_DATE_MAX = 64
"""Characters of a `--since`, `--until` or `--anchor` date."""

# Ids as people type them: a unique prefix stands for the whole id.
ID_PREFIX_MIN = 4
"""Characters after `task_`, `ev_`, `hyp_` or `dec_` a prefix must give to be looked up."""
ID_CANDIDATES_SHOWN = 10
"""Ids an ambiguous prefix lists (the count of the others stays exact)."""

# The refusal log (cortex/cases/refusals.py).
REFUSALS_MAX = 256 * KIB
"""Bytes of a case's refusals.jsonl; once full, further refusals are not recorded (capped)."""

# `cortex case show`.
SHOW_RECENT_MAX = 200
"""Newest ledger records `show` returns (with exact totals of every ledger)."""

# The handoff packet (`cortex case handoff`, docs/design/handoff.md).
HANDOFF_BUDGET = 128 * KIB
"""The most the Markdown of one handoff may take, and, separately, its JSON packet."""
HANDOFF_EVIDENCE_MAX = 50
"""Newest shareable evidence records a full handoff shows (and the only ones read into memory)."""
HANDOFF_EVIDENCE_CUT = 20
"""Newest shareable evidence records once the full packet is over the budget."""
HANDOFF_CLAIM_CUT = 1 * KIB
"""An evidence claim or URI in a cut handoff (tier 1)."""
HANDOFF_TITLE_MAX = 120
"""An evidence record's one-line title when only titles are shown (tier 2)."""
HANDOFF_TEXT_CUT = 512
"""Any text in a tier 4 handoff."""
HANDOFF_LIST_CUT = 32
"""Items of any list in a tier 4 handoff."""
HANDOFF_TEXT_MIN = 64
"""Any text in a tier 5 handoff, the last resort."""
HANDOFF_LIST_MIN = 4
"""Items of any list in a tier 5 handoff."""
HANDOFF_CHILDREN_MAX = 32
"""Child cases whose phase a handoff reads; further children are counted."""

# Reports across cases (`cortex case sessions`, `overview`, `metrics`).
SESSIONS_LIMIT_DEFAULT = 50
"""Cases one `sessions` listing returns unless asked for fewer or more (the total stays exact)."""
SESSIONS_LIMIT_MAX = 500
SESSIONS_GOAL_MAX = 200
"""Characters of a goal in a `sessions` item (longer goals are cut, with an ellipsis)."""
SESSIONS_QUERY_MAX = 256
"""A `sessions --query` text."""
SESSIONS_CAPTURES_MAX = 16
"""Distinct workspaces one `sessions` listing captures to judge live verdicts; others show none."""
STALE_AFTER_DEFAULT = 24 * 3600
"""Seconds without an update after which an active case is flagged stale (unless told)."""
STALE_AFTER_MAX = 365 * 24 * 3600
"""The longest `--stale-after` (a year)."""
PRUNE_AFTER_DEFAULT = 30 * 24 * 3600
"""How long a case that is not closed may stay idle before `case prune` abandons and archives
it, unless `prune_older_than` or `--older-than` says otherwise."""
SUMMARY_HEAD_MAX = 4 * KIB
"""Bytes of a completed case's summary.md read to find its verdict at completion."""
DAMAGED_SHOWN_MAX = 50
"""Unreadable cases an overview or a store's metrics names one by one (the count stays exact)."""

# The live board (`cortex studio`).
STUDIO_ROWS_MAX = 200
"""Newest cases one refresh of the board loads (its status line keeps the exact total)."""
STUDIO_REFRESH_DEFAULT = 2.0
"""Seconds between two refreshes of the board unless `--refresh` says otherwise."""
STUDIO_REFRESH_MIN = 0.5
"""The shortest `--refresh`: every refresh reads each case.json under the state root."""
STUDIO_REFRESH_MAX = 60.0
"""The longest `--refresh`."""

# Recall: the index across cases (`cortex recall`, the brief; docs/design/recall.md).
RECALL_QUERY_MAX = 4 * KIB
"""A `recall` query's text."""
RECALL_TERMS_MAX = 64
"""Distinct search terms in one query."""
RECALL_LIMIT_DEFAULT = 10
"""Cards one `recall` page returns unless asked for fewer or more (the total stays exact)."""
RECALL_LIMIT_MAX = 100
RECALL_BUDGET_MAX = 100_000
"""The largest `--budget` in estimated tokens."""
RECALL_GET_MAX = 100
"""Ids one `recall get` may name."""
RECALL_CURSOR_MAX = 256
"""Characters of a `recall --cursor` token."""
RECALL_SUMMARY_MAX = 64 * KIB
"""Bytes of a completed case's summary.md that `recall get` of its outcome returns."""
RECALL_BEHIND_SHOWN = 20
"""Cases a behind index names one by one (the count stays exact)."""
CARD_TITLE_MAX = 200
"""Characters of a card's one-line title."""
CARD_TEXT_MAX = 480
"""Characters of a card's text (about 120 estimated tokens)."""
CARD_PATHS_MAX = 8
"""Paths one card names."""
BRIEF_CARDS_MAX = 5
"""Cards the brief at `case open` shows."""
BRIEF_TOKENS = 400
"""Estimated tokens the brief may take."""
BRIEF_CANDIDATES = 20
"""Best matches of the goal the brief chooses from."""
SUBJECT_MAX = 256
"""A decision's `--subject`."""
FRESHNESS_PATHS_MAX = 256
"""Distinct paths one answer checks for freshness (records past them say unchecked)."""
FRESHNESS_FILE_MAX = 16 * MIB
"""The largest file whose blob id is computed, at write time and when shown."""

# Sharing cases through git refs (`cortex case share|fetch|bundle`, docs/design/sharing.md).
SHARE_BLOB_MAX = 1 * MIB
"""A raw blob larger than this is not shared: its record says it was withheld, with its size and
digest."""
SHARE_CASE_MAX = 16 * MIB
"""All a replica's export together (ledgers, snapshots, the blobs its records cite): over it,
the share is refused with the manifest."""
SHARE_SEGMENT_LINES = 256
"""Lines of one sealed ledger segment; the lines after the last one form the tail."""
SHARE_PUSH_ATTEMPTS = 5
"""Pushes one share makes before giving up (`busy`): each rejection fetches, merges, retries."""
SHARE_RETRY_PAUSE = 0.2
"""Seconds of the longest pause before the second push; each later one may wait up to one more
such step (jittered)."""
SHARE_ALL_MAX = 500
"""Cases one `share --all` or `fetch --all` handles (the newest, by id)."""
SHARE_REPLICAS_MAX = 64
"""Replicas (forked histories included) one case may hold."""
SHARE_CONFLICTS_KEPT = 64
"""Conflicts `replicas.json` keeps, newest last (the total stays exact)."""
SHARE_PR_COMMITS_MAX = 2000
"""Commits of `base..head` that `fetch --pr` reads for `Cortex-Case:` trailers."""
SHARE_PR_CASES_MAX = 64
"""Cases one `fetch --pr` may name."""
SHARE_BUNDLE_MAX = 256 * MIB
"""The largest bundle file `fetch --bundle` reads."""
SHARE_GIT_TIMEOUT = 300.0
"""Seconds one git process of a share, fetch or bundle may run."""
REVIEW_CHECKOUT_TIMEOUT = 600.0
"""Seconds `review --reproduce` gives git to clone and check out the head commit."""
SHARE_OBJECT_MAX = 64 * MIB
"""The largest object read back from git (a sealed segment can reach 256 records of 256 KiB)."""

# The reviewer's page and the merge gate (`cortex case report`, `cortex review`,
# docs/design/report.md).
REPORT_HTML_MAX = 1 * MIB
"""`case report --format html`: the default cap of the file (`--max-bytes`)."""
REPORT_MD_MAX = 1_000_000
"""`case report --format md`: the default cap, under GitHub's 1 MiB step-summary limit."""
REPORT_COMMENT_MAX = 64 * KIB
"""`case report --comment`: Markdown within a pull-request comment."""
REPORT_BYTES_MIN = 16 * KIB
"""The smallest `--max-bytes`: below it not even the verdict and receipts would fit."""
REPORT_BYTES_MAX = 16 * MIB
"""The largest `--max-bytes`."""
REPORT_EVIDENCE_MAX = 200
"""Newest evidence records a report shows (tier 0; the total stays exact)."""
REPORT_TIMELINE_MAX = 100
"""Newest timeline entries a report shows (tier 0; the total stays exact)."""
REPORT_PREVIEWS_MAX = 8
"""Raw outputs a report previews."""
REPORT_PREVIEW_BYTES = 4 * KIB
"""Bytes of one raw preview in a report (tier 0)."""
REPORT_CLAIM_CUT = 1 * KIB
"""An evidence claim in a tier 1 report."""
REPORT_AUDIT_LINES = 2_000
"""Committed ledger lines up to which a report runs the full audit (above: `--full-audit`)."""
