"""Stateful property test of the pure device model (docs/design.md, "The model").

Random sequences of standby / activate / setup_execmode / time passing / recover / snapshot-and-
restore, checked against a small reference model and against invariants after every step.
Refusals are allowed outcomes; a refusal must change nothing and emit nothing.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from csadmin.errors import CsError
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.statemachine.events import CATALOG
from csadmin.shared.states import PENDING_STATES, SETTLES_TO, ExecMode, Health, Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import FakeClock

ACTIVATE_MS = 4_000
STANDBY_MS = 2_500
TIMINGS = Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS)

S = Lifecycle.STANDBY
PA = Lifecycle.PENDING_ACTIVE
A = Lifecycle.ACTIVE
PS = Lifecycle.PENDING_STANDBY

EXPECTED_HEALTH = {
    A: Health.OK,
    S: Health.STANDBY,
    PA: Health.PENDING_ACTIVE,
    PS: Health.PENDING_STANDBY,
}


class DeviceMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clock = FakeClock()
        self.device = Device(self.clock, TIMINGS, serial="CS2-0009")
        # Reference model.
        self.state = A
        self.configured = ExecMode.PIPELINED
        self.active = ExecMode.PIPELINED
        self.pending_until: int | None = None
        # Everything seen emitted so far.
        self.seen_seq = 0
        self.all_seqs: list[int] = []

    # -- helpers -----------------------------------------------------------------------------

    def _collect(self, allowed_types: list[str] | None = None) -> list:
        """Events emitted since the last step; they must continue the seq strictly."""
        new = self.device.events.query(after_seq=self.seen_seq)
        for e in new:
            assert e.seq > self.seen_seq, (e.seq, self.seen_seq)
            assert e.type in CATALOG, e.type
            assert e.severity == CATALOG[e.type].value
            assert e.triggerTime == self.clock.now
            self.seen_seq = e.seq
            self.all_seqs.append(e.seq)
        if allowed_types is not None:
            assert [e.type for e in new] == allowed_types
        return new

    def _refused_changes_nothing(self, call) -> bool:
        """Run `call`; if refused, check nothing changed. Returns whether it was refused."""
        before = self.device.snapshot()
        before_seq = self.device.events.last_seq
        try:
            result = call()
        except CsError as err:
            assert err.code == "INVALID_STATE"
            assert self.state.value in err.message
            assert err.hint
            assert self.device.snapshot() == before
            assert self.device.events.last_seq == before_seq
            self._collect([])
            return True
        self.result = result
        return False

    def _settle(self, recovered: bool) -> None:
        new = self._collect()
        if self.state is PA:
            self.state = A
            # The system reboots into the configured mode at completion.
            self.active = self.configured
            assert self.device.system.active_mode is self.device.system.configured_mode
            assert [e.type for e in new] == ["EventEnteredActive", "EventActivateCompleted"]
        else:
            assert self.state is PS
            self.state = S
            assert [e.type for e in new] == ["EventEnteredStandby", "EventStandbyCompleted"]
        assert all(e.details["recovered"] is recovered for e in new)
        self.pending_until = None

    # -- rules -------------------------------------------------------------------------------

    def _begin(self, request, settled, already: str, emitted: list[str], pending, duration_ms: int) -> None:
        """`request` (standby or activate): refused while pending, an idempotent success when
        already `settled`, else the transition starts, to complete after `duration_ms`."""
        was = self.state
        configured_before = self.device.system.configured_mode
        refused = self._refused_changes_nothing(request)
        assert self.device.system.configured_mode is configured_before
        if was in PENDING_STATES:
            assert refused
            return
        assert not refused
        if was is settled:
            assert self.result["changed"] is False
            assert self.result["message"] == already
            self._collect([])
        else:
            assert self.result["changed"] is True
            self._collect(emitted)
            self.state = pending
            self.pending_until = self.clock.now + duration_ms

    @rule()
    def standby(self):
        self._begin(lambda: self.device.system.standby(ops.SYSTEM_STANDBY.request()), S,
                    "System is already in STANDBY.",
                    ["EventStandbyIssued", "EventPendingStandby"], PS, STANDBY_MS)

    @rule()
    def activate(self):
        self._begin(lambda: self.device.system.activate(ops.SYSTEM_ACTIVATE.request()), A,
                    "System is already in ACTIVE.",
                    ["EventActivateIssued", "EventPendingActive"], PA, ACTIVATE_MS)

    @rule(mode=st.sampled_from(list(ExecMode)))
    def setup_execmode(self, mode):
        was = self.state
        configured_before = self.device.system.configured_mode
        refused = self._refused_changes_nothing(lambda: self.device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=mode)))
        if was is not S:
            assert refused
            assert self.device.system.configured_mode is configured_before
            return
        assert not refused
        assert self.device.lifecycle is S
        assert self.device.system.configured_mode is mode
        if mode is configured_before:
            assert self.result["changed"] is False
            self._collect([])
        else:
            assert self.result["changed"] is True
            set_type = (
                "EventSetExecModeWeightStreaming" if mode is ExecMode.WEIGHT_STREAMING else "EventSetExecModePipelined"
            )
            self._collect(["EventConfigOpIssued", set_type, "EventConfigOpCompleted"])
        self.configured = mode

    @rule(ms=st.integers(min_value=0, max_value=10_000))
    def advance_time(self, ms):
        self.clock.now += ms
        configured_before = self.device.system.configured_mode
        active_before = self.device.system.active_mode
        changed = self.device.advance()
        assert self.device.system.configured_mode is configured_before
        due = self.pending_until is not None and self.clock.now >= self.pending_until
        assert changed is due
        if changed:
            self._settle(recovered=False)
        else:
            assert self.device.system.active_mode is active_before
            self._collect([])

    @rule(offset=st.sampled_from([-1, 0]))
    def advance_to_deadline(self, offset):
        """Land exactly on (or 1 ms before) the pending deadline: completion is at, not before."""
        if self.pending_until is None:
            return
        self.clock.now = max(self.clock.now, self.pending_until + offset)
        self.advance_time(0)

    @rule()
    def restart(self):
        """What csd does at start: a fresh device from the stored snapshot and events, with a
        transition the stop interrupted rolled forward at once."""
        configured_before = self.device.system.configured_mode
        active_before = self.device.system.active_mode
        snap, was = self.device.snapshot(), self.state
        fresh = Device(self.clock, TIMINGS)
        recovery = fresh.recover(snap, self.device.events.query(), [])
        assert not recovery.fresh and fresh.system.configured_mode is configured_before
        assert recovery.events == fresh.events.query(after_seq=self.device.events.last_seq)
        self.device = fresh
        if was in PENDING_STATES:
            assert recovery.rolled_forward is fresh.lifecycle is SETTLES_TO[was]
            self._settle(recovered=True)
        else:
            assert recovery.rolled_forward is None and fresh.snapshot() == snap
            assert self.device.system.active_mode is active_before
            self._collect([])

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def matches_reference_model(self):
        d = self.device
        assert d.lifecycle is self.state
        assert d.system.configured_mode is self.configured
        assert d.system.active_mode is self.active
        assert d.system.pending_until == self.pending_until
        assert d.next_deadline() == self.pending_until
        assert d.serial == "CS2-0009"

    @invariant()
    def active_means_completed_into_configured_mode(self):
        # The model's `active` is only ever set to `configured` at a completion into ACTIVE.
        if self.state is A and self.device.system.pending_until is None:
            assert self.device.system.active_mode is self.active

    @invariant()
    def pending_until_iff_pending(self):
        d = self.device
        assert (d.system.pending_until is not None) == (d.lifecycle in PENDING_STATES)

    @invariant()
    def health_follows_lifecycle(self):
        d = self.device
        assert d.health is EXPECTED_HEALTH[d.lifecycle]
        shown = d.show()
        assert shown["systemHealth"] == EXPECTED_HEALTH[d.lifecycle].value
        assert shown["state"] == d.lifecycle.value

    @invariant()
    def seqs_strictly_increase(self):
        events = self.device.events.query()
        seqs = [e.seq for e in events]
        assert all(a < b for a, b in zip(seqs, seqs[1:])), seqs
        assert all(a < b for a, b in zip(self.all_seqs, self.all_seqs[1:]))
        if events:
            assert self.device.events.last_seq == events[-1].seq
        else:
            assert self.device.events.last_seq == 0
        assert self.device.events.last_seq == self.seen_seq
        assert self.device.show()["seq"] == self.seen_seq

    @invariant()
    def no_shortcuts(self):
        assert not hasattr(self.device, "to_ACTIVE")
        assert not hasattr(self.device, "to_STANDBY")


DeviceMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
TestDeviceStateful = DeviceMachine.TestCase
