"""The errors of sharing, on the store's error tree (`cortex.cases.errors`)."""

from __future__ import annotations

from typing import Any

from cortex.cases.errors import CortexError, InvalidInputError, RefusedError


class GitFailedError(CortexError):
    """A git plumbing command failed where it should not (a damaged repository, a full disk)."""


class RemoteUnavailableError(CortexError):
    """The remote could not be reached or read (no such remote, no network): retry later."""

    code = "remote_unavailable"
    exit_status = 6
    retryable = True


class RemoteRefusedError(RefusedError):
    """The host declined the case refs (a pre-receive hook, a read-only token, a policy)."""

    code = "remote_refused"

    def __init__(self, message: str, task_ids: list[str]) -> None:
        super().__init__(message)
        self.task_ids = task_ids


class SecretFoundError(RefusedError):
    """Text about to leave looks like a secret: the share is refused, naming records only."""

    def __init__(self, message: str, records: list[str]) -> None:
        super().__init__(message)
        self.records = records
        self.report: dict[str, Any] = {"records": records}


class ShareTooLargeError(InvalidInputError):
    """A replica's export is over SHARE_CASE_MAX; the manifest travels with the error."""

    def __init__(self, message: str, manifest: dict[str, Any]) -> None:
        super().__init__(message)
        self.report = {"manifest": manifest}
