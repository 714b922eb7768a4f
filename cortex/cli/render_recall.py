"""Text for `cortex recall`, `recall get`, `reindex`, `rebuild`, and the brief at `case open`.

One line per card: its id, its text and its labels, exactly what its `estTokens` counts, so a
budget read in the envelope is the budget a person sees. Values pass through `clean` before
they get here and each goes into a `Text`, never read as markup.
"""

from __future__ import annotations

import shlex

import msgspec

from cortex.kernel.envelope import Data
from cortex.screen.ink import Console, Text


def _card(console: Console, card: Data, indent: str = "") -> None:
    line = Text(indent) + Text(card["id"], style="bold") + Text(" " + card["text"])
    for label in card["labels"]:
        line += Text(" ") + Text(label, style="yellow")
    console.print(line)


def _index(console: Console, index: Data) -> None:
    if index["state"] == "current":
        return
    if index["state"] == "missing":
        console.print(Text("the recall index does not exist yet", style="yellow"))
        return
    shown = ", ".join(index["behindCases"])
    console.print(
        Text(f"the recall index is behind on {index['behind']} case(s): {shown}", style="yellow")
    )


def _next_page(data: Data) -> str:
    words = ["cortex", "recall", data["query"]]
    filters = data["filters"]
    if filters["repo"] is not None:
        words += ["--repo", filters["repo"]]
    for kind in filters["kinds"]:
        words += ["--kind", kind]
    for status in filters["statuses"]:
        words += ["--status", status]
    for option in ("since", "until"):
        if filters[option] is not None:
            words += [f"--{option}", filters[option]]
    words += ["--limit", str(data["limit"]), "--cursor", data["nextCursor"]]
    if data.get("budget"):
        words += ["--budget", str(data["budget"]["tokens"])]
    return " ".join(shlex.quote(word) for word in words)


def recall(console: Console, data: Data) -> None:
    """A page of cards, then where the list stands."""
    for card in data["cards"]:
        _card(console, card)
    if not data["cards"]:
        console.print(Text("no card matches", style="dim"))
    first = data["offset"] + 1 if data["returned"] else data["offset"]
    summary = f"cards {first}-{data['offset'] + data['returned']} of {data['total']}"
    if data["returned"] == 0:
        summary = f"no cards shown of {data['total']}"
    spent = data.get("budget")
    if spent:
        summary += f"; {spent['used']} of {spent['tokens']} tokens"
        if spent["truncated"]:
            summary += f", truncated: {spent['skipped']} skipped ({', '.join(spent['skippedIds'])})"
    console.print(Text(summary, style="dim"))
    if data.get("nextCursor"):
        console.print(Text("next page: ", style="dim") + Text(_next_page(data)))
    _index(console, data["index"])


def get(console: Console, data: Data) -> None:
    """Each named card, then its full record as JSON."""
    for item in data["records"]:
        _card(console, item["card"])
        body = msgspec.json.format(msgspec.json.encode(item["record"]), indent=2).decode()
        console.print(Text(body))


def maintained(console: Console, data: Data) -> None:
    """What `reindex` or `rebuild` did."""
    done = data["done"]
    line = Text(f"Index {done}", style="bold green") + Text(f": {data['cards']} cards")
    if "updated" in data:
        line += Text(f", {len(data['updated'])} case(s) updated")
    if data.get("removed"):
        line += Text(f", {len(data['removed'])} removed")
    if "cases" in data:
        line += Text(f", {data['cases']} case(s) read")
    console.print(line + Text(f" ({data['engine']}, {data['path']})", style="dim"))
    for task, why in data.get("unreadable", []):
        console.print(Text(f"unreadable {task}: ", style="red") + Text(why))
    verify = data.get("verify")
    if verify:
        verdict = "agree" if verify["agree"] else "DISAGREE"
        style = "bold green" if verify["agree"] else "bold red"
        console.print(
            Text("case files and index ")
            + Text(verdict, style=style)
            + Text(": ")
            + Text(f"{verify['canonicalDigest'][:16]} / {verify['indexDigest'][:16]}")
        )
        if verify["previousAgreed"] is not None:
            before = "agreed" if verify["previousAgreed"] else "did not agree (it was behind)"
            console.print(Text(f"the index before the rebuild {before}", style="dim"))


def brief(console: Console, brief: Data | None) -> None:
    """The brief at `case open`: what earlier cases of this repository learned."""
    if brief is None:
        return
    if not brief["cards"]:
        console.print(
            Text("recall: no earlier card of this repository matches the goal", style="dim")
        )
        return
    considered = brief["considered"]
    matches = f"of {considered} matches, " if considered is not None else ""
    head = (
        f"earlier cases of this repository ({brief['returned']} {matches}"
        f"{brief['tokens']} of {brief['budget']} tokens"
    )
    head += f", {brief['skipped']} left out)" if brief["truncated"] else ")"
    console.print(Text(head + ":", style="bold"))
    for card in brief["cards"]:
        _card(console, card, "  ")


def resolved(console: Console, data: Data) -> None:
    """A person's resolution of a decision's contests."""
    console.print(
        Text(f"Resolved {data['decisionId']} ", style="bold green")
        + Text(f"as {data['outcome']}: closes {', '.join(data['contests'])}")
    )
