#!/usr/bin/env bash
# The merge gate in CI: fetch the cases a pull request names, then ask Cortex for the verdict,
# reproducing each case's proof here: every required verifier runs again on a clean checkout of
# HEAD with the BASE branch's definitions, so no approval rests on another machine's records.
#
#   examples/ci/review.sh BASE HEAD [PR]
#
# BASE  the branch the pull request merges into, as this clone names it (origin/main)
# HEAD  the pull request's head commit (not the merge commit CI may have checked out: its
#       tree is not the tree the agent verified)
# PR    the pull request's number: the cases its commits' Cortex-Case trailers name are
#       fetched from the remote first (`cortex case fetch --pr`); without it nothing is fetched
#
# Environment: CORTEX (the cortex program, default `cortex`), CORTEX_REMOTE (default origin),
# CORTEX_REVIEW_REPRODUCE (default 1; 0 judges the fetched records at the level `[review]
# accept` sets instead: docs/design/trust.md says what each level trusts),
# CORTEX_APPROVE_COMMANDS (set it in the job: the base branch's verifier commands may run),
# CORTEX_REPORTS (a folder: each case's HTML report is written there, for an artifact),
# GITHUB_STEP_SUMMARY (when set, the Markdown verdict is appended to it).
#
# Exit status: 0 approve; 5 needs_verification or request_changes; anything else is an error
# (4 bad input, 3 a missing case or pull request, 6 a busy or unreachable remote).
set -euo pipefail

cortex=${CORTEX:-cortex}
remote=${CORTEX_REMOTE:-origin}
base=${1:?usage: review.sh BASE HEAD [PR]}
head=${2:?usage: review.sh BASE HEAD [PR]}
pr=${3:-}

if [ -n "$pr" ]; then
    # A case the fetch refuses (hostile or damaged) is not imported; the review then names it.
    "$cortex" case fetch --pr "$pr" --remote "$remote" --base "${base#"$remote"/}" >&2 ||
        echo "cortex case fetch failed; the review judges what this machine holds" >&2
fi

answer=$(mktemp)
trap 'rm -f "$answer"' EXIT
reproduce=--reproduce
if [ "${CORTEX_REVIEW_REPRODUCE:-1}" = 0 ]; then
    reproduce=
fi
status=0
"$cortex" review --base "$base" --head "$head" $reproduce --format md --json >"$answer" || status=$?
if [ "$status" != 0 ] && [ "$status" != 5 ]; then
    cat "$answer" >&2
    exit "$status"
fi

python3 - "$answer" "${GITHUB_STEP_SUMMARY:-}" <<'PY'
import json, sys

envelope = json.load(open(sys.argv[1], encoding="utf-8"))
document = envelope["data"]["document"]
sys.stdout.write(document)
if sys.argv[2]:
    with open(sys.argv[2], "a", encoding="utf-8") as summary:
        summary.write(document)
PY

if [ -n "${CORTEX_REPORTS:-}" ]; then
    mkdir -p "$CORTEX_REPORTS"
    python3 -c 'import json, sys; [print(c["taskId"]) for c in json.load(open(sys.argv[1]))["data"]["cases"] if c["phase"]]' "$answer" |
        while read -r task; do
            "$cortex" case report "$task" --html "$CORTEX_REPORTS/$task.html" >/dev/null
        done
fi
exit "$status"
