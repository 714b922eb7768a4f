"""cortex/kernel/lease.py on its own: parsing, states, holders, fences, and each use case's
answer, with a clock the test sets.

test_lifecycle.py (TestLease) and test_trust.py (TestLeaseTokens) drive the lease through the
CLI in real time; here time is a number the test chooses, so that the exact expiry instant, a
lease that lapsed between the check and the commit, and every key of each answer are pinned,
and a mutation run of lease.py (docs/testing.md) sees every change. A test written for a mutant
that survived names it in its docstring (`function` number: the change).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import Cli
from lifecycle_kit import action_commands, investigating, ledger, planned, request_decision

from cortex.cases.bounds import LEASE_TTL_DEFAULT, LEASE_TTL_MAX, LEASE_TTL_MIN
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import ArgumentError
from cortex.cases.records import Lease
from cortex.kernel import lease
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.kernel import Kernel, format_time, parse_time

T0 = parse_time("2026-12-01T10:00:00.000Z")
TOKEN = "cortex-lease-" + "t" * 43
OTHER = "cortex-lease-" + "o" * 43


def held(
    actor: str = "a1",
    *,
    expires: float = T0 + 60,
    released: str | None = None,
    token: str | None = TOKEN,
) -> Lease:
    return Lease(
        actor=actor,
        acquired_at=format_time(T0),
        renewed_at=format_time(T0 + 1),
        expires_at=format_time(expires),
        released_at=released,
        token_sha256=None if token is None else lease.token_digest(token),
    )


class FakeCase:
    def __init__(self, change_lease: Lease | None) -> None:
        self.change_lease = change_lease


class FakeTxn:
    """What `require_lease_holder` and `_fence_renewal` use of a transaction."""

    def __init__(self, change_lease: Lease | None) -> None:
        self.case = FakeCase(change_lease)
        self.fences: list[Callable[[], None]] = []

    def fence(self, check: Callable[[], None]) -> None:
        self.fences.append(check)


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeKernel:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.host_session = None  # outside an agent host's session: the token decides


def require(
    txn: FakeTxn, clock: Clock, actor: str = "a1", *, required: bool, token: str | None = TOKEN
) -> None:
    lease.require_lease_holder(
        cast("Any", txn),
        actor,
        cast("Any", FakeKernel(clock)),
        doing="edit",
        required=required,
        token=token,
    )


class TestParseTtl:
    def test_units_and_bounds(self) -> None:
        assert lease.parse_ttl(None) == LEASE_TTL_DEFAULT
        assert lease.parse_ttl("90") == 90
        assert lease.parse_ttl("90s") == 90
        assert lease.parse_ttl("15m") == 900
        assert lease.parse_ttl("1h") == 3600
        assert lease.parse_ttl(f"{LEASE_TTL_MIN}s") == LEASE_TTL_MIN
        assert lease.parse_ttl(f"{LEASE_TTL_MAX}s") == LEASE_TTL_MAX
        assert lease.parse_ttl("00060") == 60

    @pytest.mark.parametrize("text", ["", "1d", "-5", "1.5m", "m", "123456", "15 m", "1hh"])
    def test_a_malformed_ttl(self, text: str) -> None:
        """Kills `parse_ttl` 13-15: the argument the message names dropped or changed."""
        with pytest.raises(ArgumentError) as caught:
            lease.parse_ttl(text)
        assert caught.value.template == f"{{ttl}} must look like 90s, 15m or 1h, not {text!r}"
        assert caught.value.arguments == ("ttl",)

    @pytest.mark.parametrize("text", ["0", "0s", "3601", "61m", "2h"])
    def test_out_of_bounds(self, text: str) -> None:
        """Kills `parse_ttl` 32-34: the argument the message names dropped or changed."""
        with pytest.raises(ArgumentError) as caught:
            lease.parse_ttl(text)
        assert caught.value.template == (
            f"{{ttl}} must be between {LEASE_TTL_MIN}s and {LEASE_TTL_MAX}s"
        )
        assert caught.value.arguments == ("ttl",)


class TestState:
    def test_states(self) -> None:
        assert lease.state(None, T0) is None
        assert lease.state(held(), T0) == "active"
        assert lease.state(held(), T0 + 59.999) == "active"
        assert lease.state(held(released=format_time(T0)), T0) == "released"
        assert lease.state(held(released=format_time(T0)), T0 + 600) == "released"

    def test_a_lease_is_expired_at_its_expiry_instant(self) -> None:
        """Kills `now < expires` -> `<=` in `state`."""
        assert lease.state(held(), T0 + 60) == "expired"

    def test_describe(self) -> None:
        """Kills each key of `describe` renamed or its value changed (`describe` 13-15:
        `renewedAt`, issue 21)."""
        assert lease.describe(None, T0) is None
        assert lease.describe(held(), T0) == {
            "actor": "a1",
            "state": "active",
            "acquiredAt": "2026-12-01T10:00:00.000Z",
            "renewedAt": "2026-12-01T10:00:01.000Z",
            "expiresAt": "2026-12-01T10:01:00.000Z",
            "releasedAt": None,
        }


class TestTokens:
    def test_digest_and_mint(self) -> None:
        assert lease.token_digest("abc") == sha256_hex(b"abc")
        assert lease.token_digest("\udcff") == sha256_hex("\udcff".encode("utf-8", "surrogatepass"))
        minted = {lease.mint() for _ in range(3)}
        assert len(minted) == 3
        for token in minted:
            assert token.startswith("cortex-lease-")
            assert len(token) == len("cortex-lease-") + 43

    def test_holds(self) -> None:
        assert lease.holds(held(), "a1", TOKEN)
        assert not lease.holds(held(), "a2", TOKEN)
        assert not lease.holds(held(), "a1", None)
        assert not lease.holds(held(), "a1", TOKEN + "x")
        assert lease.holds(held(token=None), "a1", None)
        assert lease.holds(held(token=None), "a1", "anything")
        assert not lease.holds(held(token=None), "a2", None)

    def test_check_holder(self) -> None:
        lease.check_holder(None, "a1", None, T0)
        lease.check_holder(held("a2"), "a1", None, T0 + 60)  # expired: anyone may go on
        lease.check_holder(held("a2", released=format_time(T0)), "a1", None, T0)
        lease.check_holder(held(), "a1", TOKEN, T0)
        with pytest.raises(LeaseConflictError) as other:
            lease.check_holder(held("a2"), "a1", TOKEN, T0)
        assert str(other.value) == (
            "the change lease is held by a2 until 2026-12-01T10:01:00.000Z; wait for it to be "
            "released or to expire"
        )
        with pytest.raises(LeaseConflictError) as tokenless:
            lease.check_holder(held(), "a1", "cortex-lease-other", T0)
        assert tokenless.value.template == (
            "the change lease is held by a1 until 2026-12-01T10:01:00.000Z under a lease token "
            "this call did not give ({lease_token}); a caller of the same name that was not "
            "given the token does not hold it: wait for the lease to be released or to expire"
        )
        assert tokenless.value.arguments == ("lease_token",)


class TestRequireLeaseHolder:
    def test_the_holder_is_fenced(self) -> None:
        txn, clock = FakeTxn(held()), Clock()
        require(txn, clock, required=True)
        assert len(txn.fences) == 1
        txn.fences[0]()
        clock.now = T0 + 60
        with pytest.raises(LeaseConflictError) as caught:
            txn.fences[0]()
        assert str(caught.value) == (
            "cannot edit: a1 holds no active change lease (it expired or was released); take it "
            "again with begin-change"
        )

    def test_a_required_lease_nobody_holds(self) -> None:
        with pytest.raises(LeaseConflictError, match=r"^cannot edit: a1 holds no active"):
            require(FakeTxn(None), Clock(), required=True)
        with pytest.raises(LeaseConflictError, match=r"^cannot edit: a1 holds no active"):
            require(FakeTxn(held(expires=T0)), Clock(), required=True)

    def test_someone_elses_lease_refuses_even_an_optional_write(self) -> None:
        with pytest.raises(LeaseConflictError, match=r"^the change lease is held by a2"):
            require(FakeTxn(held("a2")), Clock(), required=False)

    def test_an_optional_write_without_a_lease_is_not_fenced(self) -> None:
        txn = FakeTxn(None)
        require(txn, Clock(), required=False)
        assert txn.fences == []
        released = FakeTxn(held(released=format_time(T0)))
        require(released, Clock(), required=False)
        assert released.fences == []

    def test_an_optional_write_by_the_holder_is_fenced(self) -> None:
        """Kills `ours and state(...) == "active"` with `ours` dropped or `== "active"`
        changed: the holder's optional write is fenced, so a lapse before the commit stops it."""
        txn, clock = FakeTxn(held()), Clock()
        require(txn, clock, required=False)
        assert len(txn.fences) == 1
        clock.now = T0 + 61
        with pytest.raises(LeaseConflictError, match=r"^cannot edit"):
            txn.fences[0]()

    def test_an_optional_write_after_ones_own_lease_expired(self) -> None:
        """Kills `require_lease_holder` 41: `ours and state(...) == "active"` -> `ours or
        state(...) == "active"` (issue 21): after the actor's own lease expired, a write that
        does not need the lease is not fenced on it, so it is not refused at the commit."""
        txn = FakeTxn(held())
        require(txn, Clock(T0 + 120), required=False)
        assert txn.fences == []

    def test_an_optional_write_by_a_namesake_without_the_token(self) -> None:
        """Kills `ours = lease is not None and holds(...)` -> `or`, and `holds` dropped: a
        caller of the holder's name without its token is refused, not fenced as the holder."""
        with pytest.raises(LeaseConflictError, match="under a lease token"):
            require(FakeTxn(held()), Clock(), required=False, token=None)
        legacy = FakeTxn(held(token=None))
        require(legacy, Clock(), required=False, token=None)
        assert len(legacy.fences) == 1


class TestFenceRenewal:
    def test_the_renewal_fence_at_the_exact_expiry(self) -> None:
        """Kills `_fence_renewal` 1: `kernel.clock() >= expires` -> `>` (issue 21): at the old
        expiry instant the lease has lapsed, so the renewal is refused."""
        txn, clock = FakeTxn(held()), Clock(T0 + 59.999)
        lease._fence_renewal(
            cast("Any", txn), cast("Any", FakeKernel(clock)), "a1", expires=T0 + 60
        )
        assert len(txn.fences) == 1
        txn.fences[0]()
        clock.now = T0 + 60
        with pytest.raises(LeaseConflictError) as caught:
            txn.fences[0]()
        assert str(caught.value) == (
            "the lease of a1 expired before the renewal could be committed; take it again with "
            "begin-change"
        )


class TestUseCases:
    """begin-change, renew and release through a kernel whose clock the test sets."""

    @pytest.fixture
    def kernel(self, env: dict[str, str], repo: Path) -> tuple[Kernel, Clock]:
        clock = Clock(T0)
        return Kernel(str(repo), env, default_actor="cli", clock=clock), clock

    def test_begin_change_renew_release(self, cli: Cli, kernel: tuple[Kernel, Clock]) -> None:
        """Kills the answer's keys renamed (`_lease_result` 8: `taskId`, `describe` 13, 14:
        `renewedAt`; issue 21), the verbs changed, and `release` 54, 55: the release's
        `unchanged` for an idempotent retry changed (issue 21)."""
        k, clock = kernel
        task = planned(cli)
        taken = lease.begin_change(k, task, actor="a1", ttl="60s")
        token = taken.data["leaseToken"]
        assert isinstance(token, str)
        assert token.startswith("cortex-lease-")
        revision = taken.data["revision"]
        assert taken.data == {
            "taskId": task,
            "revision": revision,
            "status": "changing",
            "lease": {
                "actor": "a1",
                "state": "active",
                "acquiredAt": "2026-12-01T10:00:00.000Z",
                "renewedAt": "2026-12-01T10:00:00.000Z",
                "expiresAt": "2026-12-01T10:01:00.000Z",
                "releasedAt": None,
            },
            "result": "acquired",
            "leaseToken": token,
        }
        clock.now = T0 + 30
        renewed = lease.renew(k, task, actor="a1", ttl="2m", lease_token=token)
        assert renewed.data["result"] == "renewed"
        assert renewed.data["leaseToken"] is None
        assert renewed.data["revision"] == revision + 1
        assert renewed.data["lease"]["renewedAt"] == "2026-12-01T10:00:30.000Z"
        assert renewed.data["lease"]["expiresAt"] == "2026-12-01T10:02:30.000Z"
        again = lease.begin_change(k, task, actor="a1", ttl="60s", lease_token=token)
        assert again.data["result"] == "renewed"
        assert again.data["leaseToken"] is None
        assert again.data["lease"]["expiresAt"] == "2026-12-01T10:01:30.000Z"
        clock.now = T0 + 40
        released = lease.release(k, task, actor="a1", lease_token=token)
        assert released.data["result"] == "released"
        assert released.data["lease"]["state"] == "released"
        assert released.data["lease"]["releasedAt"] == "2026-12-01T10:00:40.000Z"
        assert released.data["revision"] == revision + 3
        retry = lease.release(k, task, actor="a1", lease_token=token)
        assert retry.data["result"] == "unchanged"
        assert retry.data["revision"] == revision + 3
        assert retry.data["taskId"] == task

    def test_renew_at_the_exact_expiry_is_refused(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        k, clock = kernel
        task = planned(cli)
        token = lease.begin_change(k, task, actor="a1", ttl="60s").data["leaseToken"]
        clock.now = T0 + 60
        with pytest.raises(LeaseConflictError) as caught:
            lease.renew(k, task, actor="a1", lease_token=token)
        assert str(caught.value) == (
            "the lease of a1 expired at 2026-12-01T10:01:00.000Z; take it again with begin-change"
        )

    def test_an_expired_lease_is_replaced_with_the_next_epoch(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        k, clock = kernel
        task = planned(cli)
        lease.begin_change(k, task, actor="a1", ttl="60s")
        clock.now = T0 + 61
        taken = lease.begin_change(k, task, actor="a2", ttl="60s")
        assert taken.data["result"] == "acquired"
        assert taken.data["lease"]["actor"] == "a2"
        assert taken.data["lease"]["acquiredAt"] == "2026-12-01T10:01:01.000Z"
        case = k.store.read_case(task)
        assert case.change_lease is not None
        assert case.change_lease.epoch == 2

    def test_renew_and_release_refusals(self, cli: Cli, kernel: tuple[Kernel, Clock]) -> None:
        k, clock = kernel
        task = planned(cli)
        with pytest.raises(GateRefusedError, match="there is no lease to renew"):
            lease.renew(k, task, actor="a1")
        assert lease.release(k, task, actor="a1").data["result"] == "unchanged"
        token = lease.begin_change(k, task, actor="a1", ttl="60s").data["leaseToken"]
        with pytest.raises(LeaseConflictError, match=r"^the change lease is held by a1 until"):
            lease.renew(k, task, actor="a2")
        with pytest.raises(LeaseConflictError, match="under a lease token"):
            lease.renew(k, task, actor="a1")
        with pytest.raises(LeaseConflictError, match="under a lease token"):
            lease.release(k, task, actor="a1", lease_token=OTHER)
        with pytest.raises(LeaseConflictError, match=r"^the change lease is held by a1 until"):
            lease.release(k, task, actor="a2")
        clock.now = T0 + 61
        with pytest.raises(LeaseConflictError) as renewing:
            lease.renew(k, task, actor="a2")
        assert str(renewing.value) == "the lease belongs to a1; take it with begin-change"
        with pytest.raises(LeaseConflictError) as releasing:
            lease.release(k, task, actor="a2")
        assert str(releasing.value) == "the lease belongs to a1; only its holder releases it"
        assert lease.release(k, task, actor="a1", lease_token=token).data["result"] == "released"
        with pytest.raises(GateRefusedError, match="there is no lease to renew"):
            lease.renew(k, task, actor="a1", lease_token=token)


class TestRecords:
    """What each use case writes besides the lease: the audit line, the phase, the actions."""

    @pytest.fixture
    def kernel(self, env: dict[str, str], repo: Path) -> tuple[Kernel, Clock]:
        clock = Clock(T0)
        return Kernel(str(repo), env, default_actor="cli", clock=clock), clock

    def test_each_use_case_audits_as_its_actor_and_operation(
        self, cli: Cli, env: dict[str, str], kernel: tuple[Kernel, Clock]
    ) -> None:
        """Kills `begin_change` 10, 11, 15, 16, 106, `renew` 9, 10, 14, 15 and `release` 7, 8,
        12, 13: the transaction's actor or operation, or the phase's actor, changed."""
        k, _ = kernel
        task = planned(cli)
        token = lease.begin_change(k, task, actor="a1", ttl="60s").data["leaseToken"]
        assert ledger(env, task, "phases")[-1]["actor"] == "a1"
        lease.renew(k, task, actor="a1", lease_token=token)
        lease.release(k, task, actor="a1", lease_token=token)
        audit = [(line["actor"], line["operation"]) for line in ledger(env, task, "commands")]
        assert audit[-3:] == [
            ("a1", "case.begin-change"),
            ("a1", "case.lease.renew"),
            ("a1", "case.lease.release"),
        ]

    def test_begin_change_refusals_say_why(self, cli: Cli, kernel: tuple[Kernel, Clock]) -> None:
        """Kills `begin_change` 21-26 (the mode refusal's message or actions dropped), 34
        (`check_holder(None, ...)`: another actor's active lease ignored) and 47, 48, 52, 55,
        56 (the phase gate's wording or its transaction dropped)."""
        k, _ = kernel
        review = investigating(cli, "--mode", "review")
        with pytest.raises(GateRefusedError) as mode:
            lease.begin_change(k, review, actor="a1")
        assert str(mode.value) == "begin-change is for change tasks; this one is a review task"
        assert mode.value.actions
        early = investigating(cli)
        with pytest.raises(GateRefusedError) as phase:
            lease.begin_change(k, early, actor="a1")
        assert str(phase.value).startswith("cannot begin changing")
        assert any(a.command.startswith(f"cortex case plan {early} ") for a in phase.value.actions)
        task = planned(cli)
        lease.begin_change(k, task, actor="a1", ttl="60s")
        with pytest.raises(LeaseConflictError, match=r"^the change lease is held by a1 until"):
            lease.begin_change(k, task, actor="a2")

    def test_begin_change_in_a_pause_names_the_decision(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        """Kills `begin_change` 48, 52: the phase gate without the transaction, whose actions
        then cannot name the pending decision a person must answer."""
        k, _ = kernel
        task = planned(cli)
        token = lease.begin_change(k, task, actor="a1", ttl="60m").data["leaseToken"]
        decision = request_decision(cli, task)["decision"]["id"]
        with pytest.raises(GateRefusedError) as caught:
            lease.begin_change(k, task, actor="a1", lease_token=token)
        assert str(caught.value).startswith("cannot begin changing: the case is ")
        assert any(decision in a.command for a in caught.value.actions), caught.value.actions

    def test_renewing_names_the_holder_in_the_fence(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        """Kills `begin_change` 75 and `renew` 68: `_fence_renewal(txn, kernel, None, ...)`.

        The fence is run as the transaction commits; the clock is moved past the old expiry
        between the check and the fence by a clock that advances when the fence reads it.
        """
        k, _ = kernel
        task = planned(cli)
        token = lease.begin_change(k, task, actor="a1", ttl="60s").data["leaseToken"]
        reads = iter([T0 + 59, T0 + 59, T0 + 59, T0 + 61])

        def lapsing() -> float:
            return next(reads, T0 + 61)

        k.clock = lapsing
        with pytest.raises(LeaseConflictError) as caught:
            lease.renew(k, task, actor="a1", lease_token=token)
        assert str(caught.value).startswith("the lease of a1 expired before the renewal")
        reads = iter([T0 + 59, T0 + 59, T0 + 59, T0 + 61])
        with pytest.raises(LeaseConflictError) as again:
            lease.begin_change(k, task, actor="a1", lease_token=token)
        assert str(again.value).startswith("the lease of a1 expired before the renewal")

    def test_a_lease_from_before_tokens(self, cli: Cli, kernel: tuple[Kernel, Clock]) -> None:
        """Kills `begin_change` 70-72 (the old lease not given a token when its holder renews
        it) and `renew` 49, 50 (the refusal to renew it by name, and its message)."""
        k, _ = kernel
        task = planned(cli)
        lease.begin_change(k, task, actor="a1", ttl="60s")
        with k.store.transaction(task, actor="a1", operation="test") as txn:
            assert txn.case.change_lease is not None
            txn.case.change_lease.token_sha256 = None
        with pytest.raises(LeaseConflictError) as by_name:
            lease.renew(k, task, actor="a1")
        assert str(by_name.value) == (
            "the lease of a1 was taken before lease tokens and is honoured by name only until "
            "2026-12-01T10:01:00.000Z; renew it with begin-change, which returns a token"
        )
        upgraded = lease.begin_change(k, task, actor="a1", ttl="60s")
        assert upgraded.data["result"] == "renewed"
        token = upgraded.data["leaseToken"]
        assert isinstance(token, str)
        assert token.startswith("cortex-lease-")
        stored = k.store.read_case(task).change_lease
        assert stored is not None
        assert stored.token_sha256 == lease.token_digest(token)

    def test_renew_without_a_lease_offers_actions(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        """Kills `renew` 29, 31, 32: the refusal's actions dropped or its message changed."""
        k, _ = kernel
        task = planned(cli)
        with pytest.raises(GateRefusedError) as caught:
            lease.renew(k, task, actor="a1")
        assert str(caught.value) == "there is no lease to renew; run begin-change"
        assert any("begin-change" in a.command for a in caught.value.actions)

    def test_the_answer_offers_next_steps_and_names_the_minted_token(
        self, cli: Cli, kernel: tuple[Kernel, Clock]
    ) -> None:
        """Kills `_lease_result` 3, 4, 6, 7: `actions` or `minted` dropped (a minted token is
        what lets the answer return the token unredacted)."""
        k, _ = kernel
        task = planned(cli)
        taken = lease.begin_change(k, task, actor="a1", ttl="60s")
        assert taken.minted == ("leaseToken",)
        assert taken.actions
        assert action_commands({"actions": [{"command": a.command} for a in taken.actions]})


class TestReleaseForClose:
    def test_closing_ends_an_active_lease_and_keeps_a_released_one(self) -> None:
        """Kills `release_for_close` 1-5."""
        active = FakeTxn(held())
        lease.release_for_close(cast("Any", active), "2026-12-01T10:00:30.000Z")
        assert active.case.change_lease is not None
        assert active.case.change_lease.released_at == "2026-12-01T10:00:30.000Z"
        done = FakeTxn(held(released="2026-12-01T10:00:10.000Z"))
        lease.release_for_close(cast("Any", done), "2026-12-01T10:00:30.000Z")
        assert done.case.change_lease is not None
        assert done.case.change_lease.released_at == "2026-12-01T10:00:10.000Z"
        lease.release_for_close(cast("Any", FakeTxn(None)), "2026-12-01T10:00:30.000Z")
