"""Stateful property test of runs and the fabric on the pure device model (DESIGN.md §2.3).

Random sequences of open / program (compatible or not) / stream / heartbeat / close / abort /
standby (forced or not) / activate / time passing / a restart from the stored records, by two
clients. Invariants after every step: at most one open run and it is the holder; at most one
successful program per run; the fabric is released whenever a run ends; standby never leaves a
run holding the fabric; a refusal changes nothing and emits nothing.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from csadmin.errors import CsError
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.statemachine.events import EventLog
from csadmin.statemachine.programs import RunMode, parse_program
from csadmin.statemachine.runs import Fabric, RunStatus
from csadmin.states import Lifecycle
from tests.statemachine.fakeclock import FakeClock

SERIAL = "CS2-0003"
LEASE_MS = 3_000
RATE = 1_000  # bytes per second
CLIENTS = ("client-a", "client-b")


def descriptor(compatible: str, size: int) -> dict:
    raw = {
        "fingerprint": "f1", "target_system": SERIAL, "execmode": "PIPELINED", "mode": "train",
        "compile_time": 3.0, "est_samples_per_sec": 100.0, "size_bytes": size,
    }
    if compatible == "other-system":
        raw["target_system"] = "CS2-0999"
    elif compatible == "other-execmode":
        raw["execmode"] = "WEIGHT_STREAMING"
    elif compatible == "train_and_eval":
        raw["mode"] = "train_and_eval"
    return parse_program(raw)


class RunsMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clock = FakeClock()
        self.timings = Timings(activate_ms=2_000, standby_ms=1_000, lease_ms=LEASE_MS, program_bytes_per_second=RATE)
        self.device = Device(self.clock, self.timings, serial=SERIAL)
        self.stored: dict[str, dict] = {}  # what the daemon would have written (take_dirty)
        self.run_ids: list[str] = []

    # -- helpers -------------------------------------------------------------------------------

    def _try(self, call):
        """Run `call`; a refusal must change nothing and emit nothing."""
        runs = self.device.runs
        before = [r.to_dict() for r in runs.listing()]
        snap, seq = self.device.snapshot(), self.device.events.last_seq
        try:
            result = call()
        except CsError as err:
            assert err.code and err.message and err.hint
            assert [r.to_dict() for r in runs.listing()] == before
            assert self.device.snapshot() == snap and self.device.events.last_seq == seq
            return None
        self._store()
        return result

    def _store(self):
        for record in self.device.runs.take_dirty():
            self.stored[record["runId"]] = record

    # -- rules ---------------------------------------------------------------------------------

    @rule(client=st.sampled_from(CLIENTS), mode=st.sampled_from(list(RunMode)), lease=st.sampled_from([None, 500, 5_000]))
    def open(self, client, mode, lease):
        had_holder = self.device.runs.holder is not None
        run = self._try(lambda: self.device.open_run(f"job-{client}", client, mode, lease))
        if run is not None:
            assert not had_holder and self.device.lifecycle is Lifecycle.ACTIVE
            self.run_ids.append(run.run_id)
        else:
            assert had_holder or self.device.lifecycle is not Lifecycle.ACTIVE

    @precondition(lambda self: self.run_ids)
    @rule(
        data=st.data(), client=st.sampled_from(CLIENTS),
        compatible=st.sampled_from(["yes", "yes", "other-system", "other-execmode", "train_and_eval"]),
        size=st.sampled_from([0, 500, 4_000]),
    )
    def program(self, data, client, compatible, size):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.program_run(run_id, client, descriptor(compatible, size)))
        if result is not None:
            assert compatible == "yes" and result.mode == "train" and result.client == client

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS), samples=st.integers(0, 1_000))
    def stream(self, data, client, samples):
        run_id = data.draw(st.sampled_from(self.run_ids))
        total = self.device.runs._runs[run_id].total_samples if run_id in self.device.runs._runs else None
        result = self._try(lambda: self.device.runs.stream(run_id, client, samples))
        if result is not None:
            assert result.fabric is Fabric.PROGRAMMED and result.total_samples == total + samples

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS))
    def heartbeat(self, data, client):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.heartbeat(run_id, client))
        if result is not None:
            assert result.lease_until == self.clock.now + result.lease_ms

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS), reason=st.sampled_from([None, "runtime failed"]))
    def close(self, data, client, reason):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.close(run_id, client, reason))
        if result is not None:
            run, changed = result
            assert run.status is (RunStatus.ABORTED if changed and reason else RunStatus.CLOSED)

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data())
    def abort(self, data):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.abort(run_id, "admin"))
        if result is not None:
            assert result[0].status is RunStatus.ABORTED

    @rule(force=st.booleans())
    def standby(self, force):
        holder = self.device.runs.holder
        result = self._try(lambda: self.device.standby(force=force))
        if holder is not None and self.device.lifecycle is not Lifecycle.ACTIVE:
            assert force and holder.status is RunStatus.ABORTED
        if holder is not None and not force:
            assert result is None

    @rule()
    def activate(self):
        self._try(self.device.activate)

    @rule(ms=st.sampled_from([1, 499, 500, 1_000, 2_999, 3_000, 10_000]))
    def time_passes(self, ms):
        self.clock.now += ms
        self.device.advance()
        self._store()

    @rule()
    def restart(self):
        """What csd does at start: rebuild from the stored records and abort the open run."""
        events = EventLog()
        events.restore(self.device.events.query())
        fresh = Device(self.clock, self.timings, serial=SERIAL, events=events)
        fresh.restore(self.device.snapshot())
        fresh.runs.restore(sorted(self.stored.values(), key=lambda r: r["number"]))
        fresh.runs.take_dirty()
        assert [r.to_dict() for r in fresh.runs.listing()] == [r.to_dict() for r in self.device.runs.listing()]
        fresh.recover()
        aborted = fresh.abort_open_run("daemon restarted")
        if aborted is not None:
            assert aborted.abort_reason == "daemon restarted"
        self.device = fresh
        self._store()

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def at_most_one_open_run_and_it_holds_the_fabric(self):
        open_runs = [r for r in self.device.runs.listing() if r.is_open]
        assert len(open_runs) <= 1
        assert self.device.runs.holder is (open_runs[0] if open_runs else None)

    @invariant()
    def at_most_one_successful_program_per_run(self):
        started = Counter(e.details["runId"] for e in self.device.events.query("EventProgrammingStarted"))
        assert all(n == 1 for n in started.values()), started

    @invariant()
    def ended_runs_released_the_fabric(self):
        for run in self.device.runs.listing():
            if not run.is_open:
                assert run.ended_at is not None and run.lease_until is None and run.performance is not None
                assert self.device.runs.holder is not run
        if self.device.runs.holder is None:
            assert self.device.runs.fabric() is Fabric.UNPROGRAMMED

    @invariant()
    def no_run_holds_the_fabric_outside_active(self):
        if self.device.lifecycle is not Lifecycle.ACTIVE:
            assert self.device.runs.holder is None

    @invariant()
    def the_timer_knows_every_deadline(self):
        holder = self.device.runs.holder
        deadline = self.device.next_deadline()
        if holder is not None:
            assert deadline is not None and deadline <= holder.lease_until
        if holder is None and self.device.pending_until is None:
            assert deadline is None

    @invariant()
    def every_run_event_names_a_known_run(self):
        for e in self.device.events.query("Event*ing*"):
            if "runId" in e.details:
                assert e.details["runId"] in self.run_ids


RunsMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestRuns = RunsMachine.TestCase
