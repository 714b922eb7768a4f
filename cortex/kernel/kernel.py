"""The kernel context: workspace, configuration and store, resolved once per call.

Surfaces build one `Kernel` from the working directory and the environment they were given
(nothing here reads `os.environ`), then call use cases with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING

import msgspec

from cortex.cases.errors import CortexError, InvalidInputError, NotFoundError, naming
from cortex.cases.fsio import fsync_dir, make_private_dirs, write_new_file
from cortex.cases.ids import check_id, is_id
from cortex.cases.layout import ARCHIVE_DIR, case_dir
from cortex.cases.records import Via
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore
from cortex.kernel import validate
from cortex.kernel.config import Config, load_config, state_root
from cortex.kernel.host_session import HostSession, from_environment
from cortex.workspace.identity import WorkspaceIdentity, discover

if TYPE_CHECKING:
    from cortex.kernel.progress import Progress

STORE_GITIGNORE = b"""# A Cortex case store. Only the store's own files are ignored: anything
# else put here stays visible to git, and so to the code state that
# verification binds receipts to.
/.gitignore
/.store.lock
/.keys/
/.creating-*
/.removing-*
/.archive/
/.adopted.json
/task_*/
"""


PERSON_PRESENT: frozenset[str] = frozenset({"cli-tty", "studio"})
"""The channels with a person at them: the CLI at its controlling terminal, and Studio."""


def format_time(moment: float) -> str:
    """Seconds since the epoch as RFC 3339 UTC with milliseconds."""
    millis = int(moment * 1000)
    seconds, rest = divmod(millis, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:03d}Z"


def parse_time(text: str) -> float:
    """The inverse of `format_time` (any RFC 3339 UTC timestamp)."""
    from datetime import datetime  # already loaded by msgspec: free

    return datetime.fromisoformat(text).timestamp()


def _require_utf8(label: str, path: str) -> None:
    """Case files record paths as JSON text, which must be valid UTF-8: refuse others upfront."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"the {label} path {path!a} is not valid UTF-8; use a directory whose name is"
        raise InvalidInputError(msg) from None


class StoreInfo(msgspec.Struct, kw_only=True):
    """Where a store lives and how it was identified (shown by `status` and `list`)."""

    id: str
    kind: str
    root: str
    note: str | None = None


class Kernel:
    """Everything a use case needs, resolved from one working directory and environment."""

    def __init__(
        self,
        cwd: str,
        env: Mapping[str, str],
        *,
        default_actor: str,
        clock: Callable[[], float] = time.time,
        progress: Progress | None = None,
        via: Via | None = None,
        host_session: HostSession | None = None,
        stdin: IO[bytes] | None = None,
    ) -> None:
        self.env = env
        self.cwd = cwd
        """Where the call runs: a relative path in its input resolves here (the CLI's `-C`)."""
        self.stdin = stdin
        """What an input's `-` reads (the CLI's standard input); None where there is none."""
        self.clock = clock
        self.progress = progress
        """Where long use cases report what they are doing (a face's sink), or None."""
        self.via: Via | None = via
        """How this call arrived, as the face that built the kernel decided (docs/design/
        trust.md): every record it writes says so. None for a library call that did not say."""
        self.host_session = host_session or from_environment(env)
        """The agent host's session this call runs in, if any (docs/design/hosts.md): a caller
        from the session that took the change lease holds it without its token."""
        self.workspace: WorkspaceIdentity = discover(cwd, env)
        self.config: Config = load_config(self.workspace.root, env)
        self.state_root = state_root(env)
        self.redactor = Redactor(self.config.redact_literals)
        self.cases_root = self.config.cases_dir or os.path.join(
            self.state_root, "sessions", self.workspace.store_id
        )
        self.default_actor = default_actor
        self.writing: tuple[str, CaseStore] | None = None
        """The case this call is writing (set by `find_writable`), for `record_refusal`."""
        self.acted_as: str | None = None
        """The identity this call acts as, once validated (`actor`)."""
        for label, path in (
            ("workspace", self.workspace.root),
            ("state directory", self.state_root),
            ("cases directory", self.cases_root),
        ):
            _require_utf8(label, path)
        self.store = self._store(self.cases_root)

    def now(self) -> str:
        """The current time, formatted for records."""
        return format_time(self.clock())

    @property
    def person_present(self) -> bool:
        """Whether a person is at the channel this call arrived on (a terminal, Studio)."""
        return self.via in PERSON_PRESENT

    def _store(self, root: str) -> CaseStore:
        return CaseStore(
            root,
            redactor=self.redactor,
            lock_timeout=self.config.lock_timeout,
            now=self.now,
            via=self.via,
        )

    def reader(self, root: str) -> CaseStore:
        """The store at `root`, for reading (writes go through `writable`)."""
        return self._store(root)

    @property
    def store_info(self) -> StoreInfo:
        """The current workspace's store."""
        return StoreInfo(
            id=self.workspace.store_id if self.config.cases_dir is None else "configured",
            kind=self.workspace.kind,
            root=self.cases_root,
            note=self.workspace.note,
        )

    def acting(self, given: str | None) -> str | None:
        """Who acts where the use case may choose: the one given, else $CORTEX_ACTOR, else None.

        Given None, verify and complete take the lease holder.
        """
        return given or self.env.get("CORTEX_ACTOR") or None

    def lease_actor(self, given: str | None) -> str:
        """Who takes or gives up the change lease: the one given, $CORTEX_ACTOR, else the face's.

        A name does not make a holder: the lease token does (docs/design/trust.md, "Lease
        tokens"), so two callers that both fall back to `mcp` or `cli` are still two holders.
        In an agent host's session the fallback is the session's own name (`claude-3f2c9a1b`).
        """
        actor = self.acting(given)
        if actor is None and self.host_session is not None:
            actor = self.host_session.actor
        return actor or self.default_actor

    @property
    def session_digest(self) -> str | None:
        """The digest a lease taken in this call's host session keeps, or None outside one."""
        return None if self.host_session is None else self.host_session.digest

    def actor(self, given: str | None) -> str:
        """The acting identity: the one given, else the surface default; validated."""
        self.acted_as = validate.identifier(given or self.default_actor, "actor", self.redactor)
        return self.acted_as

    def record_refusal(self, operation: str, code: str) -> None:
        """Count a refused command in the case it was writing (`refusals.jsonl`), if any.

        Only the refusals of the case's rules count (`refusals.RECORDED`): a gate, a lease
        held by someone else, a revision that moved. Nothing of the case itself changes.
        """
        from cortex.cases import refusals

        if self.writing is None or code not in refusals.RECORDED:
            return
        task_id, store = self.writing
        try:
            path = store.case_path(task_id)
        except CortexError:
            return
        record = refusals.Refusal(
            timestamp=self.now(), operation=operation, code=code, actor=self.acted_as
        )
        refusals.append(path, record)

    def find(self, ref: str, *, argument: str = "task") -> tuple[str, CaseStore]:
        """The whole task id `ref` names, and the store holding that case.

        `ref` is a task id, a unique prefix of one, or `@latest` (the newest case opened in
        this workspace); see `cortex.kernel.refs`. A whole id or a prefix is looked up in this
        workspace's store first, then in every store under the state root: reading a case
        works from any directory. Writers use `find_writable`.
        """
        if is_id(ref, "task"):  # the common case: a whole id needs no prefix machinery
            return ref, self._locate(ref)
        from cortex.kernel import refs

        if ref == refs.LATEST:
            return self._latest(), self.store
        if refs.whole(ref, "task", what="task id", latest=True):
            return ref, self._locate(ref)
        here = [task for task in self.store.list_ids() if task.startswith(ref)]
        if here:
            task_id = refs.pick(
                ref,
                here,
                argument=argument,
                noun="cases",
                where=f"this workspace's store ({self.cases_root})",
                title=lambda task: self._goal(self.store, task),
            )
            return task_id, self.store
        found: dict[str, str] = {}
        for root in self._other_stores():
            try:
                names = os.listdir(root)
            except OSError:
                continue
            for name in names:
                if name.startswith(ref) and is_id(name, "task"):
                    found.setdefault(name, root)
        task_id = refs.pick(
            ref,
            found,
            argument=argument,
            noun="cases",
            where=f"this workspace's store or under {os.path.join(self.state_root, 'sessions')}",
            title=lambda task: self._goal(self._store(found[task]), task),
        )
        return task_id, self._locate(task_id)

    def find_writable(self, ref: str, *, argument: str = "task") -> tuple[str, CaseStore]:
        """`find`, for a writer: only this workspace's store, so its configuration applies.

        A case opened in another repository is written from there: its redaction literals and
        store settings come from that repository's configuration.
        """
        task_id, store = self.find(ref, argument=argument)
        if os.path.basename(store.root) == ARCHIVE_DIR:
            from cortex.kernel.envelope import step
            from cortex.kernel.errors import GateRefusedError

            msg = f"case {task_id} is archived: unarchive it to write to it"
            raise GateRefusedError(msg, [step("case.unarchive", "bring it back", task=task_id)])
        self.writing = (task_id, store)
        if store is not self.store:
            workspace = store.read_case(task_id).workspace.root
            msg = (
                f"case {task_id} belongs to the workspace {workspace}; write to it from there "
                f"({{workspace}} {workspace})"
            )
            raise naming(NotFoundError(msg), "workspace")
        return task_id, store

    def locate(self, task_id: str) -> CaseStore:
        """The store holding a case (`find` without the whole id)."""
        return self.find(task_id)[1]

    def writable(self, task_id: str) -> CaseStore:
        """The store to write a case in (`find_writable` without the whole id)."""
        return self.find_writable(task_id)[1]

    def _locate(self, task_id: str) -> CaseStore:
        """The store holding the case with this whole id."""
        check_id(task_id, "task", what="task id")
        if self.store.exists(task_id):
            return self.store
        matches = [root for root in self._other_stores() if os.path.isdir(case_dir(root, task_id))]
        if len(matches) > 1:
            raise InvalidInputError(f"case {task_id} exists in more than one store: {matches}")
        if matches:
            return self._store(matches[0])
        sessions = os.path.join(self.state_root, "sessions")
        raise NotFoundError(f"no case {task_id} in this workspace's store or under {sessions}")

    def _other_stores(self) -> list[str]:
        """Every store under the state root, then those registered elsewhere (cases_dir).

        The registered ones are listed only when they are asked about: a store a repository
        keeps elsewhere is found through the registry written when it was made.
        """
        sessions = os.path.join(self.state_root, "sessions")
        try:
            stores = [os.path.join(sessions, name) for name in sorted(os.listdir(sessions))]
        except FileNotFoundError:
            stores = []
        from cortex.kernel.stores import registered

        seen = {*stores, self.cases_root}
        extra = [root for root in registered(self.state_root) if root not in seen]
        others = [root for root in stores if root != self.cases_root] + extra
        # Archived cases last: found by id for reading, never by a writer (`find_writable`).
        archives = [os.path.join(root, ARCHIVE_DIR) for root in (self.cases_root, *others)]
        return others + [root for root in archives if os.path.isdir(root)]

    def _latest(self) -> str:
        """The newest case opened in this workspace (its own worktree, if a store is shared).

        A case opened at a root this store adopted after a move counts as opened here
        (`cortex adopt`, docs/design/paths.md).
        """
        from cortex.kernel.stores import adopted_roots

        here = {self.workspace.root, *adopted_roots(self.cases_root, self.workspace.root)}
        for task_id in self.store.list_ids():
            if self.store.read_case(task_id).workspace.root in here:
                return task_id
        msg = f"no case has been opened in {self.workspace.root} yet, so @latest names none"
        raise NotFoundError(msg)

    @staticmethod
    def _goal(store: CaseStore, task_id: str) -> str | None:
        from cortex.kernel.refs import short

        try:
            return short(store.read_case(task_id).goal)
        except (CortexError, OSError):
            return None

    def prepare_store(self) -> None:
        """Create the store directory (writers only); a repo-local store is git-ignored."""
        root = self.cases_root
        inside = root.startswith(self.workspace.root.rstrip(os.sep) + os.sep)
        if inside:
            self._refuse_symlinked_components(root)
            self._refuse_foreign_directory(root)
        make_private_dirs(root)
        if self.config.cases_dir is not None:
            # Outside the state root: readers elsewhere find it through the registry.
            from cortex.kernel.stores import register

            register(self.state_root, root)
        if inside:
            ignore_file = os.path.join(root, ".gitignore")
            if not os.path.lexists(ignore_file):
                try:
                    # Readable like the repository's other files, from the moment it exists.
                    write_new_file(ignore_file, STORE_GITIGNORE, mode=0o644)
                except FileExistsError:
                    return
                fsync_dir(root)

    def _refuse_foreign_directory(self, root: str) -> None:
        """An in-repository store must be a directory of its own (new, empty or a store).

        Cortex writes a `.gitignore` of `*` into it: in a source directory that would hide new
        files from git, and so from the digest verification binds receipts to.
        """
        import re

        try:
            names = os.listdir(root)
        except (FileNotFoundError, NotADirectoryError):
            return
        own = re.compile(
            r"task_[0-9A-Z]{26}|\.store\.lock|\.keys|\.creating-.*|\.gitignore"
            r"|\.archive|\.removing-.*|\.adopted\.json"
        )
        foreign = sorted(name for name in names if not own.fullmatch(name))
        if foreign:
            msg = (
                f"cases_dir {root} already holds files that are not cases ({foreign[0]}, ...); "
                "point it at a new or empty directory such as .cortex/cases"
            )
            raise InvalidInputError(msg)

    def _refuse_symlinked_components(self, root: str) -> None:
        current = self.workspace.root
        for part in os.path.relpath(root, self.workspace.root).split(os.sep):
            current = os.path.join(current, part)
            if os.path.islink(current):
                msg = f"cases_dir passes through the symlink {current}; refusing to follow it"
                raise InvalidInputError(msg)
