#!/usr/bin/env bash
# Cortex quickstart: copy the bundled example app into a throwaway git repository, set it up
# with `cortex init`, open a case for a bug, record evidence (one piece with raw tool output),
# plan, fix, verify, and complete it.
#
# Everything happens in a temporary directory, including the case store (CORTEX_STATE_DIR),
# so your real state is untouched. Set CORTEX to the cortex executable to use (default: cortex
# on PATH; its virtualenv must have pytest, as `pip install '.[dev]'` gives it); set KEEP=1 to
# keep the temporary directory and look around afterwards.
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
python=$(dirname "$cortex")/python
# The app's own virtualenv (git-ignored, as virtualenvs are): here, the one cortex runs in.
ln -s "$(cd "$(dirname "$cortex")/.." && pwd)" .venv
printf '.venv\n' > .gitignore

echo "== set the repository up"
# `init` finds the test runner and writes [verifiers.pytest] to cortex.toml, with the app's
# interpreter relative to the repository (.venv/bin/python), so the file works in any clone.
# The verifier runs that command, never one a caller passes, and only when approved: a
# launcher sets CORTEX_APPROVE_COMMANDS=1 (as here), or a person runs `cortex case trust
# pytest` once at a terminal.
"$cortex" init
export CORTEX_APPROVE_COMMANDS=1
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
  --boundary-reason "the redirect target is decided here" --verify pytest --verify scope
# The lease token is printed once; lease-bound commands (verify, complete) read it from here.
CORTEX_LEASE_TOKEN=$("$cortex" case begin-change "$task" --ttl 15m --json |
  "$python" -c 'import json, sys; print(json.load(sys.stdin)["data"]["leaseToken"])')
export CORTEX_LEASE_TOKEN
echo "took the change lease; its token is in CORTEX_LEASE_TOKEN"

echo "== show the case"
"$cortex" case status "$task"
"$cortex" case read-evidence "$task" "$raw"
echo "-- its raw output, as stored (the bearer token never reached the disk):"
ref=$("$cortex" case read-evidence "$task" "$raw" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["evidence"]["rawRef"])')
cat "$CORTEX_STATE_DIR"/sessions/*/"$task"/raw/"${ref##*/}".txt

claim=(--claim "return=after login from checkout the user is back on /checkout"
  --contract "return=pytest#tests/test_callback.py::test_login_from_checkout_returns_to_checkout")

echo "== a first attempt that misses the point: verify fails, naming the failing test"
sed -i.orig 's/"""Where to send the user after login."""/"""Where to send the user after login (return_to wins)."""/' \
  src/auth/callback.py && rm -f src/auth/callback.py.orig
status=0
"$cortex" case verify "$task" "${claim[@]}" || status=$?
echo "-- verify exited $status: the batch is recorded, and it does not verify the case"
[ "$status" = 2 ]

echo "== fix the bug, verify again: receipts bound to this exact code"
cat > src/auth/callback.py <<'PY'
"""OAuth callback for a small shop: where the user lands after logging in."""

from __future__ import annotations

from urllib.parse import parse_qs


def resolve_return_url(params: dict[str, str]) -> str:
    """Where to send the user after login: return_to, else the page kept in the OAuth state."""
    return_to = params.get("return_to") or parse_qs(params.get("state", "")).get("return_to", [""])[0]
    if not return_to.startswith("/") or return_to.startswith("//"):
        return "/"
    return return_to


def handle_callback(params: dict[str, str]) -> tuple[int, str]:
    """Finish the login and redirect."""
    return 302, resolve_return_url(params)
PY
"$cortex" case verify "$task" "${claim[@]}"

echo "== an edit after verifying makes that proof stale"
cp src/auth/callback.py "$work/callback.py"
echo "# an afterthought" >> src/auth/callback.py
"$cortex" case status "$task"
mv "$work/callback.py" src/auth/callback.py
echo "-- reverted: the code is byte for byte what was verified, so the proof counts again"

echo "== complete on the strength of current proof, and export it as an in-toto statement"
"$cortex" case complete "$task" --outcome "return_to survives the OAuth state round trip"
"$cortex" case attest "$task" --json |
  python3 -c 'import json, sys; s = json.load(sys.stdin)["data"]["statement"]; print(json.dumps(s["predicate"], indent=2))'
"$cortex" case audit "$task"
echo "== the case directory"
ls -la "$CORTEX_STATE_DIR"/sessions/*/"$task"
