#!/usr/bin/env bash
# Cortex quickstart: copy the bundled example app into a throwaway git repository, open a case
# for a bug, record evidence (one piece with raw tool output), and show the case.
#
# Everything happens in a temporary directory, including the case store (CORTEX_STATE_DIR),
# so your real state is untouched. Set CORTEX to the cortex executable to use (default: cortex
# on PATH); set KEEP=1 to keep the temporary directory and look around afterwards.
set -euo pipefail

cortex=${CORTEX:-cortex}
case "$cortex" in
  */*) cortex="$(cd "$(dirname "$cortex")" && pwd)/$(basename "$cortex")" ;;
  *) cortex=$(command -v "$cortex") || { echo "cortex is not on PATH; set CORTEX" >&2; exit 1; } ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cortex-quickstart.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$work"' EXIT; fi

export CORTEX_STATE_DIR="$work/state"
export CORTEX_ACTOR=quickstart-agent
repo="$work/checkout-app"
cp -R "$here/checkout-app" "$repo"
cd "$repo"
git -c init.defaultBranch=main init -q
git add -A
git -c user.name=Quickstart -c user.email=quickstart@example.invalid commit -q -m "checkout app"

echo "== open a case"
task=$("$cortex" case open "Login from checkout returns the user to /" \
  --mode change --risk medium \
  --criterion "return=after login from checkout the user is back on /checkout" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["taskId"])')
echo "opened $task"

echo "== record evidence"
"$cortex" case evidence add "$task" \
  --claim "resolve_return_url falls back to / when return_to is missing" \
  --kind code_location --file src/auth/callback.py --line 8-11 --symbol resolve_return_url \
  --confidence high
raw=$(printf 'GET /auth/callback?code=abc  -> 302 Location: /\nAuthorization: Bearer abcdef0123456789abcdef\n' |
  "$cortex" case evidence add "$task" \
    --claim "a login started from /checkout was redirected to /" \
    --kind terminal_run --source curl --raw-file - --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["evidence"]["id"])')
"$cortex" case note "$task" "return_to is dropped before the callback; check the login link"

echo "== plan, then take the change lease"
first=$("$cortex" case read-evidence "$task" "$raw" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["evidence"]["id"])')
"$cortex" case plan "$task" \
  --hypothesis "resolve_return_url drops return_to :: a callback with return_to=/checkout still lands on /" \
  --support "1=$first" --uncertainty "the login link may already lose return_to" \
  --file src/auth/callback.py --symbol resolve_return_url \
  --boundary-reason "the redirect target is decided here" --verify pytest
"$cortex" case begin-change "$task" --ttl 15m

echo "== show the case"
"$cortex" case status "$task"
"$cortex" case read-evidence "$task" "$raw"
echo "-- its raw output, as stored (the bearer token never reached the disk):"
cat "$CORTEX_STATE_DIR"/sessions/*/"$task"/raw/*.txt
"$cortex" case audit "$task"
echo "== the case directory"
ls -la "$CORTEX_STATE_DIR"/sessions/*/"$task"
