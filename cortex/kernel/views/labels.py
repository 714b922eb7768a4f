"""Labels the reviewer views add to records when they show them (docs/design/recall.md).

Freshness (`[moved: a -> b]`, `[stale: missing a]`, `[changed since 1a2b3c4]`) is computed now,
against the workspace the case was opened in, for evidence naming a file. Decision history
(`(superseded by dec_...)`, `[contested]`) comes from the recall index, which relates the
decisions of every case of a repository; it is asked only when the shown records include an
answered decision or a contest, so other views never load it. Labels are added to what is
shown, never stored, and never take a record out of the view.
"""

from __future__ import annotations

from collections.abc import Sequence

from cortex.cases.documents import Decision
from cortex.cases.records import CaseFile, Evidence
from cortex.cases.store import CaseStore
from cortex.kernel.kernel import Kernel
from cortex.workspace.freshness import Ref, labels


def evidence_labels(
    kernel: Kernel,
    store: CaseStore,
    case: CaseFile,
    records: Sequence[Evidence],
    decisions: Sequence[Decision] = (),
) -> dict[str, list[str]]:
    """Labels by record id, for evidence records and answered decisions being shown."""
    found: dict[str, list[str]] = {}
    located = [
        record
        for record in records
        if record.location is not None
        and record.location.file is not None
        and record.sensitivity != "sensitive"
    ]
    if located:
        refs = [
            Ref(r.location.file, r.location.blob, r.location.head)  # type: ignore[union-attr,arg-type]
            for r in located
        ]
        for record, label in zip(
            located, labels(case.workspace.root, kernel.env, refs), strict=True
        ):
            if label is not None:
                found.setdefault(record.id, []).append(label)
    related = [r.id for r in records if r.contests is not None]
    related += [d.id for d in decisions if d.status == "answered"]
    if related:
        from cortex.kernel.recall import relation_labels

        for record_id, shown in relation_labels(kernel, store, related).items():
            found.setdefault(record_id, []).extend(shown)
    return found
