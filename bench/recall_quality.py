"""A labelled retrieval benchmark for recall: Recall@5, MRR and the brief's tokens.

It seeds a multi-case corpus through the kernel, the way agents write cases (open, evidence,
plan, resolve, decide, verify, complete), then asks labelled queries through the production
path (`cortex.kernel.views.recall.recall`, the ranker `cortex recall` uses) and opens one brief
per topic (`cortex.kernel.recall.brief`). Each query names the cards it must find, by what they
were seeded from; card ids are only known after seeding.

    python bench/recall_quality.py                     # print the scores
    python bench/recall_quality.py --write-baseline    # lock them in bench/recall_baseline.json

tests/test_recall_quality.py runs the same evaluation and fails on a drop of Recall@5 or MRR,
or a rise of the brief's tokens, against the locked baseline; it fails closed when the baseline
is missing or the query set is empty. Only `--write-baseline` writes the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BASELINE = Path(__file__).resolve().parent / "recall_baseline.json"


class Topic(NamedTuple):
    """One subject two cases worked on, each with its own wrong turn and real cause."""

    name: str
    goal: str
    cases: tuple[dict[str, str], dict[str, str]]
    question: str
    options: tuple[tuple[str, str], tuple[str, str], tuple[str, str]]
    subject: str


TOPICS = (
    Topic(
        "login", "Fix the login redirect after checkout",
        (
            {"wrong": "the session cookie expires before the oauth callback returns",
             "why": "a fresh cookie still lost the target page",
             "cause": "resolve_return_url drops return_to when the referrer header is empty",
             "seen": "reproduced with curl and no referrer header",
             "outcome": "return_to survives the oauth callback on every browser"},
            {"wrong": "nginx strips the query string on the 302 response",
             "why": "nginx access logs show the query string intact",
             "cause": "the login form posts to an absolute url without return_to",
             "seen": "the form action attribute lacks the parameter",
             "outcome": "the login form carries return_to in a hidden field"},
        ),
        "How are redirect targets validated?",
        (("allow", "an allowlist of relative paths"), ("regex", "a regular expression over urls"),
         ("trust", "trust the parameter as given")),
        "redirect validation",
    ),
    Topic(
        "payments", "Stop duplicate charges from payment webhook retries",
        (
            {"wrong": "stripe sends each webhook event twice by design",
             "why": "the event ids in the stripe dashboard are unique",
             "cause": "the webhook handler commits the charge before storing the idempotency key",
             "seen": "a retry during the commit window charges again",
             "outcome": "webhook retries are deduplicated by event id"},
            {"wrong": "the load balancer replays slow requests to a second worker",
             "why": "balancer logs show one upstream per request",
             "cause": "refund jobs re-enqueue themselves when the ledger lock times out",
             "seen": "the job queue holds two refund jobs for one order",
             "outcome": "refund jobs take the ledger lock with a longer timeout"},
        ),
        "Where are idempotency keys kept?",
        (("table", "a unique table in postgres"), ("redis", "redis with a ttl"),
         ("memory", "an in-process dictionary")),
        "idempotency keys",
    ),
    Topic(
        "uploads", "Make avatar image uploads resize reliably",
        (
            {"wrong": "pillow cannot decode progressive jpeg files",
             "why": "pillow opens the sample progressive jpeg fine",
             "cause": "exif orientation is ignored so portrait photos resize sideways",
             "seen": "rotating by the exif tag fixes the thumbnails",
             "outcome": "thumbnails honour exif orientation"},
            {"wrong": "the s3 bucket policy blocks multipart uploads",
             "why": "multipart uploads succeed with the aws cli",
             "cause": "the resize worker runs out of memory on huge png files",
             "seen": "the worker is killed by the oom killer at 512 megabytes",
             "outcome": "large png files are downscaled in tiles"},
        ),
        "Which library resizes images?",
        (("pillow", "pillow in the worker"), ("vips", "libvips through pyvips"),
         ("cdn", "the cdn image service")),
        "image resizing",
    ),
    Topic(
        "search", "Fix search pagination that repeats results",
        (
            {"wrong": "elasticsearch shards return results in random order",
             "why": "a single shard index repeats results too",
             "cause": "the sort has no tiebreaker so equal scores swap between pages",
             "seen": "adding the document id to the sort removes repeats",
             "outcome": "search pages sort by score then document id"},
            {"wrong": "the frontend requests the same page twice on scroll",
             "why": "the network panel shows one request per page",
             "cause": "offset pagination shifts when new documents are indexed between pages",
             "seen": "indexing during a walk moves a result to the next page",
             "outcome": "search uses search_after cursors instead of offsets"},
        ),
        "How does search paginate?",
        (("cursor", "search_after cursors"), ("offset", "from and size offsets"),
         ("scroll", "the scroll api")),
        "search pagination",
    ),
    Topic(
        "exports", "Repair csv export encoding for accented names",
        (
            {"wrong": "excel cannot read utf8 csv files at all",
             "why": "excel reads utf8 with a byte order mark",
             "cause": "the export writes utf8 without a byte order mark so excel guesses latin1",
             "seen": "adding a bom shows the accents correctly",
             "outcome": "csv exports start with a utf8 byte order mark"},
            {"wrong": "the database column stores names as latin1",
             "why": "the column collation is utf8mb4",
             "cause": "the streaming writer splits multibyte characters across chunks",
             "seen": "accents break exactly at the 8192 byte chunk boundary",
             "outcome": "the export encodes whole rows before chunking"},
        ),
        "Which delimiter do exports use?",
        (("comma", "comma separated"), ("semicolon", "semicolon for european locales"),
         ("tab", "tab separated values")),
        "export format",
    ),
    Topic(
        "cache", "Stop stale product prices after updates",
        (
            {"wrong": "the cdn caches the price api for an hour",
             "why": "the api response carries no cache headers the cdn honours",
             "cause": "cache invalidation runs before the price transaction commits",
             "seen": "reads between invalidation and commit refill the old price",
             "outcome": "price cache is invalidated after commit"},
            {"wrong": "the browser service worker serves old catalog pages",
             "why": "a private window shows the old price too",
             "cause": "the memcached key omits the currency so prices collide",
             "seen": "euro and dollar prices share one cache entry",
             "outcome": "price cache keys include the currency"},
        ),
        "How long may prices be cached?",
        (("never", "no caching of prices"), ("short", "sixty seconds"),
         ("long", "one hour with invalidation")),
        "price caching",
    ),
    Topic(
        "timezones", "Correct daily report totals around midnight",
        (
            {"wrong": "the report cron job runs twice on daylight saving days",
             "why": "the cron log shows one run per day",
             "cause": "orders are grouped by utc date while the report shows local days",
             "seen": "totals match once grouped by the store timezone",
             "outcome": "reports group orders by the store local date"},
            {"wrong": "postgres now returns server local time",
             "why": "the server timezone setting is utc",
             "cause": "refunds are stamped with the request time instead of the order time",
             "seen": "late refunds land on the next day report",
             "outcome": "refunds carry the original order timestamp"},
        ),
        "Which timezone do reports use?",
        (("store", "the store timezone"), ("utc", "utc for everyone"),
         ("viewer", "the viewer browser timezone")),
        "report timezone",
    ),
    Topic(
        "sockets", "Keep websocket notifications alive behind the proxy",
        (
            {"wrong": "the client library leaks listeners on reconnect",
             "why": "listener counts stay flat across reconnects",
             "cause": "the proxy closes idle websocket connections after sixty seconds",
             "seen": "sending a ping every thirty seconds keeps them open",
             "outcome": "websocket heartbeats every thirty seconds"},
            {"wrong": "redis pubsub drops messages under load",
             "why": "redis monitor shows every publish delivered",
             "cause": "reconnects resubscribe before the auth handshake finishes",
             "seen": "subscriptions made before auth are silently refused",
             "outcome": "the client resubscribes after the auth handshake"},
        ),
        "How do clients reconnect?",
        (("backoff", "exponential backoff with jitter"), ("fixed", "every five seconds"),
         ("manual", "a reload button")),
        "websocket reconnect",
    ),
)  # fmt: skip


class Query(NamedTuple):
    """A labelled query: its text and the seeded items it must find."""

    text: str
    expected: tuple[str, ...]


def queries() -> list[Query]:
    """Fragments of what they look for (a few words, never the whole text), so ranking matters:
    both cases of a topic, and the other topics, share vocabulary with each query."""
    found: list[Query] = []
    for topic in TOPICS:
        for n, case in enumerate(topic.cases):
            key = f"{topic.name}{n}"
            wrong, cause, outcome = (case[k].split() for k in ("wrong", "cause", "outcome"))
            found.append(Query(" ".join(wrong[1:4]), (f"{key}.rejected",)))
            found.append(Query(" ".join(cause[2:5]), (f"{key}.confirmed", f"{key}.evidence")))
            found.append(Query(" ".join(outcome[-3:]), (f"{key}.outcome",)))
        # The option turned down is searchable: "already rejected: ...".
        found.append(Query(topic.options[1][1], (f"{topic.name}.decision",)))
    return found


def seed(kernel: Any) -> dict[str, str]:
    """Make every case through the kernel; seeded item -> card id."""
    from cortex.kernel.human.decisions import answer, request
    from cortex.kernel.proof.verify import verify
    from cortex.kernel.steps.complete import complete
    from cortex.kernel.steps.evidence import add_evidence
    from cortex.kernel.steps.open_case import open_case
    from cortex.kernel.steps.plan import plan
    from cortex.kernel.steps.resolve import resolve

    ids: dict[str, str] = {}
    for topic in TOPICS:
        for n, case in enumerate(topic.cases):
            key = f"{topic.name}{n}"
            task = open_case(kernel, goal=topic.goal, mode="investigate", no_recall=True)
            task_id = task.data["taskId"]
            seen = add_evidence(
                kernel, task_id, claim=case["seen"], confidence="high", file="app.py"
            )
            ids[f"{key}.evidence"] = seen.data["evidence"].id
            made = plan(
                kernel,
                task_id,
                hypotheses=[f"{case['wrong']} :: disproved if {case['why']}",
                            f"{case['cause']} :: disproved if it still fails without it"],
                uncertainty="whether another path shows the same symptom",
                verify=["scope"],
            )  # fmt: skip
            wrong, right = (h.id for h in made.data["hypotheses"])
            resolve(kernel, task_id, wrong, status="rejected", reason=case["why"])
            resolve(
                kernel, task_id, right, status="confirmed", reason=case["seen"],
                evidence=[ids[f"{key}.evidence"]],
            )  # fmt: skip
            ids[f"{key}.rejected"], ids[f"{key}.confirmed"] = wrong, right
            if n == 0:
                asked = request(
                    kernel, task_id, question=topic.question, subject=topic.subject,
                    options=[f"{oid}={label}" for oid, label in topic.options],
                )  # fmt: skip
                decision = asked.data["decision"].id
                # The corpus stands in for alice typing the option id at her terminal.
                answer(
                    kernel, task_id, decision, option=topic.options[0][0], responder="alice",
                    confirm=lambda asked: asked.option,
                )  # fmt: skip
                ids[f"{topic.name}.decision"] = decision
            verify(kernel, task_id)
            complete(kernel, task_id, outcome=case["outcome"], verification_not_possible="bench")
            ids[f"{key}.outcome"] = task_id
    return ids


def evaluate(kernel: Any, ids: dict[str, str], labelled: list[Query]) -> dict[str, Any]:
    """Recall@5 and MRR (cut at 10) over `labelled`, and the brief's tokens per topic."""
    from cortex.kernel.recall import brief
    from cortex.kernel.views.recall import recall

    if not labelled:
        msg = "the labelled query set is empty: nothing to evaluate"
        raise ValueError(msg)
    recalls: list[float] = []
    reciprocal: list[float] = []
    ranks: list[dict[str, Any]] = []
    for query in labelled:
        found = [card.id for card in recall(kernel, query.text, limit=10).data["cards"]]
        wanted = [ids[item] for item in query.expected]
        recalls.append(sum(1 for w in wanted if w in found[:5]) / len(wanted))
        first = min((found.index(w) + 1 for w in wanted if w in found), default=None)
        reciprocal.append(0.0 if first is None else 1.0 / first)
        ranks.append({"query": query.text, "expected": list(query.expected), "rank": first})
    tokens = [
        brief(kernel, "task_00000000000000000000000000", topic.goal)[0]["tokens"]
        for topic in TOPICS
    ]
    return {
        "queries": len(labelled),
        "recallAt5": round(sum(recalls) / len(recalls), 4),
        "mrr": round(sum(reciprocal) / len(reciprocal), 4),
        "briefTokens": sum(tokens),
        "briefTokensMax": max(tokens),
        "ranks": ranks,
    }


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def run(base: Path) -> dict[str, Any]:
    """Seed a corpus under `base` and evaluate it."""
    from cortex.kernel.kernel import Kernel

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base / "home"),
        "CORTEX_STATE_DIR": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    repo = base / "repo"
    repo.mkdir(parents=True)
    (base / "home").mkdir()
    _git(repo, env, "-c", "init.defaultBranch=main", "init", "-q")
    (repo / "app.py").write_text("print('shop')\n")
    _git(repo, env, "add", "app.py")
    _git(repo, env, "commit", "-q", "-m", "initial")
    kernel = Kernel(str(repo), env, default_actor="agent-1")
    ids = seed(kernel)
    return evaluate(kernel, ids, queries())


def check(result: dict[str, Any], baseline_path: Path | None = None) -> list[str]:
    """What got worse than the locked baseline (empty: the gate passes); fails closed."""
    baseline_path = baseline_path or BASELINE
    if not baseline_path.is_file():
        return [f"no baseline at {baseline_path}: run bench/recall_quality.py --write-baseline"]
    baseline = json.loads(baseline_path.read_text())
    problems = []
    if not result.get("queries") or not baseline.get("queries"):
        problems.append("the labelled query set is empty")
    if result["recallAt5"] < baseline["recallAt5"]:
        problems.append(f"Recall@5 fell from {baseline['recallAt5']} to {result['recallAt5']}")
    if result["mrr"] < baseline["mrr"]:
        problems.append(f"MRR fell from {baseline['mrr']} to {result['mrr']}")
    if result["briefTokens"] > baseline["briefTokens"]:
        problems.append(
            f"the briefs grew from {baseline['briefTokens']} to {result['briefTokens']} tokens"
        )
    return problems


def main() -> int:
    """Print the scores; with --write-baseline, lock them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write-baseline", action="store_true", help="lock these scores")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cortex-recall-quality-") as base:
        result = run(Path(base))
    print(
        f"queries {result['queries']}, Recall@5 {result['recallAt5']}, MRR {result['mrr']}, "
        f"brief tokens {result['briefTokens']} (largest brief {result['briefTokensMax']})"
    )
    for item in result["ranks"]:
        if item["rank"] != 1:
            print(f"  rank {item['rank']}: {item['query']!r} -> {item['expected']}")
    if args.write_baseline:
        locked = {k: result[k] for k in ("queries", "recallAt5", "mrr", "briefTokens")}
        BASELINE.write_text(json.dumps(locked, indent=2) + "\n")
        print(f"wrote {BASELINE}")
    else:
        problems = check(result)
        for problem in problems:
            print(f"WORSE: {problem}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
