"""`cortex case audit`: the read-only integrity check of one case."""

from __future__ import annotations

from cortex.cases.errors import IntegrityError
from cortex.cases.findings import AuditReport
from cortex.cases.integrity import audit_case
from cortex.cases.layout import case_dir
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import TaskOnly
from cortex.kernel.kernel import Kernel


class AuditFailedError(IntegrityError):
    """The audit found integrity errors; the report travels with the error."""

    def __init__(self, report: AuditReport) -> None:
        first = report.errors[0]
        where = f" ({first.file})" if first.file else ""
        super().__init__(f"{len(report.errors)} integrity error(s); first: {first.message}{where}")
        self.report = report


def audit(kernel: Kernel, task_id: str) -> AuditReport:
    """Audit a case; raises AuditFailedError (exit 4) carrying the report when it fails."""
    task_id, store = kernel.find(task_id)
    report = audit_case(case_dir(store.root, task_id), task_id, kernel.redactor)
    if not report.ok:
        raise AuditFailedError(report)
    return report


def audit_report(kernel: Kernel, given: TaskOnly) -> Result:
    """`audit` for one input, as a command's answer."""
    return Result(data=audit(kernel, given.task_id))
