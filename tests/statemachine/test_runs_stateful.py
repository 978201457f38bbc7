"""Stateful property test of runs and the fabric on the pure device model (docs/design.md, "Runs").

Random sequences of open / program (compatible or not) / stream / heartbeat / close / abort /
standby (forced or not) / activate / time passing / a restart from the stored records, by two
clients, each request in a change (Device.change()) as csd makes it; some changes are then not
saved (their commit fails), alone or in a batch of several. Invariants after every step: at most
one open run and it is the holder; at most one successful program per run; the fabric is released
whenever a run ends; standby never leaves a run holding the fabric; a refusal changes nothing and
emits nothing; a change that is not saved leaves the model exactly as it was.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from csadmin.errors import CsError
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.shared.programs import RunMode, parse_program
from csadmin.statemachine.workers import token_digest
from csadmin.shared.states import Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import FakeClock

SERIAL = "CS2-0003"
LEASE_MS = 3_000
RATE = 1_000  # bytes per second
CLIENTS = ("client-a", "client-b")
WORKERS = ("worker-x", "worker-y")  # input workers: they join with the token, then stream and heartbeat
TOKEN = "the-token"
COMPATIBILITY = ["yes", "yes", "other-system", "other-execmode", "train_and_eval"]


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


class NotSaved(Exception):
    """What a failed commit raises inside csd's change."""


class RunsMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clock = FakeClock()
        self.timings = Timings(activate_ms=2_000, standby_ms=1_000, lease_ms=LEASE_MS, program_bytes_per_second=RATE)
        self.device = Device(self.clock, self.timings, serial=SERIAL)
        self.stored: dict[str, dict] = {}  # what csd would have written
        self.run_ids: list[str] = []

    # -- helpers -------------------------------------------------------------------------------

    def _everything(self) -> tuple:
        """All the model shows: the device, every kept run, the events, what is unsaved."""
        d = self.device
        return d.snapshot(), d.runs.listing(), d.events.query(), d.events.last_seq, d.run_book.unsaved(), d.next_deadline()

    def _try(self, call):
        """Run `call` in a change, as csd does; a refusal must change nothing and emit nothing."""
        before = self._everything()
        try:
            with self.device.change() as change:
                result = call()
        except CsError as err:
            assert err.code and err.message and err.hint
            assert self._everything() == before
            return None
        assert [e.seq for e in change.events] == list(range(before[3] + 1, self.device.events.last_seq + 1))
        self._store()
        return result

    def _store(self):
        records = self.device.run_book.unsaved()
        for record in records:
            self.stored[record["runId"]] = record
        self.device.run_book.saved(records)

    def _request(self, kind: str, client: str, run_id: str | None, compatible: str):
        d = self.device
        return {
            "open": lambda: d.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner=f"job-{client}"), client),
            "program": lambda: d.runs.program(ops.RUN_PROGRAM.request(run_id=run_id, program=descriptor(compatible,
                                                                                                        500)), client),
            "stream": lambda: d.runs.stream(ops.RUN_STREAM.request(run_id=run_id, samples=7), client),
            "close": lambda: d.runs.close(ops.RUN_CLOSE.request(run_id=run_id), client),
            "abort": lambda: d.runs.abort(ops.RUNS_ABORT.request(run_id=run_id, reason="admin")),
            "standby": lambda: d.system.standby(ops.SYSTEM_STANDBY.request(force=True)),
            "activate": lambda: d.system.activate(ops.SYSTEM_ACTIVATE.request()),
        }[kind]

    # -- rules ---------------------------------------------------------------------------------

    @rule(client=st.sampled_from(CLIENTS), mode=st.sampled_from(list(RunMode)), lease=st.sampled_from([None, 500, 5_000]))
    def open(self, client, mode, lease):
        had_holder = self.device.runs.listing()["runHolder"] is not None
        run = self._try(lambda: self.device.runs.open(ops.RUN_OPEN.request(mode=mode, owner=f"job-{client}",
                                                                           lease_seconds=None if lease is None else lease / 1000, workers=1), client, token_digest(TOKEN)))
        if run is not None:
            assert not had_holder and self.device.lifecycle is Lifecycle.ACTIVE
            self.run_ids.append(run["runId"])
        else:
            assert had_holder or self.device.lifecycle is not Lifecycle.ACTIVE

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS), compatible=st.sampled_from(COMPATIBILITY),
          size=st.sampled_from([0, 500, 4_000]))
    def program(self, data, client, compatible, size):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.program(ops.RUN_PROGRAM.request(run_id=run_id,
                                                                                    program=descriptor(compatible,
                                                                                                       size)), client))
        if result is not None:
            assert compatible == "yes" and result["mode"] == "train" and result["client"] == client

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), worker=st.sampled_from(WORKERS + CLIENTS), token=st.sampled_from([TOKEN, TOKEN, "wrong"]))
    def join(self, data, worker, token):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.join(ops.RUN_JOIN.request(run_id=run_id, token=token), worker))
        if result is not None:
            assert token == TOKEN and result["status"] == "OPEN" and result["client"] != worker

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), worker=st.sampled_from(WORKERS))
    def leave(self, data, worker):
        run_id = data.draw(st.sampled_from(self.run_ids))
        self._try(lambda: self.device.runs.leave(ops.RUN_LEAVE.request(run_id=run_id), worker))

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS + WORKERS), samples=st.integers(0, 1_000))
    def stream(self, data, client, samples):
        run_id = data.draw(st.sampled_from(self.run_ids))
        total = self.device.runs.show(run_id)["totalSamples"]
        result = self._try(lambda: self.device.runs.stream(ops.RUN_STREAM.request(run_id=run_id, samples=samples),
                                                           client))
        if result is not None:
            assert result["fabric"] == "PROGRAMMED" and result["totalSamples"] == total + samples

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS + WORKERS))
    def heartbeat(self, data, client):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run_id), client))
        if result is not None and client in WORKERS:  # a worker's call keeps the worker alive, not the run
            (row,) = [w for w in self.device.runs.show(run_id)["workers"] if w.get("client") == client]
            assert row["lastSeen"] == self.clock.now
        elif result is not None:
            assert result["leaseUntil"] == self.clock.now + self.device.runs.show(run_id)["leaseSeconds"] * 1000

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data(), client=st.sampled_from(CLIENTS), reason=st.sampled_from([None, "runtime failed"]))
    def close(self, data, client, reason):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.close(ops.RUN_CLOSE.request(run_id=run_id, reason=reason), client))
        if result is not None:
            assert result["status"] == ("ABORTED" if result["changed"] and reason else "CLOSED")

    @precondition(lambda self: self.run_ids)
    @rule(data=st.data())
    def abort(self, data):
        run_id = data.draw(st.sampled_from(self.run_ids))
        result = self._try(lambda: self.device.runs.abort(ops.RUNS_ABORT.request(run_id=run_id, reason="admin")))
        if result is not None:
            assert result["status"] == "ABORTED"

    @rule(force=st.booleans())
    def standby(self, force):
        holder = self.device.runs.listing()["runHolder"]
        result = self._try(lambda: self.device.system.standby(ops.SYSTEM_STANDBY.request(force=force)))
        if holder is not None and self.device.lifecycle is not Lifecycle.ACTIVE:
            assert force and self.device.runs.show(holder["runId"])["status"] == "ABORTED"
        if holder is not None and not force:
            assert result is None

    @rule()
    def activate(self):
        self._try(lambda: self.device.system.activate(ops.SYSTEM_ACTIVATE.request()))

    @rule(
        data=st.data(),
        kinds=st.lists(st.sampled_from(["open", "program", "stream", "close", "abort", "standby", "activate"]),
                       min_size=1, max_size=4),
        clients=st.lists(st.sampled_from(CLIENTS), min_size=4, max_size=4),
        compatible=st.sampled_from(COMPATIBILITY),
    )
    def a_batch_that_cannot_be_saved(self, data, kinds, clients, compatible):
        """Several requests applied one by one, each in its own change (some refused, undoing
        only themselves), then their common commit fails: the model is exactly as before."""
        before = self._everything()
        try:
            with self.device.change():
                for kind, client in zip(kinds, clients):
                    run_id = data.draw(st.sampled_from(self.run_ids)) if self.run_ids else "run-000001"
                    mid = self._everything()
                    try:
                        with self.device.change():
                            self._request(kind, client, run_id, compatible)()
                    except CsError:
                        assert self._everything() == mid  # a refusal undoes only itself
                raise NotSaved()
        except NotSaved:
            pass
        assert self._everything() == before

    @rule(ms=st.sampled_from([1, 499, 500, 1_000, 2_999, 3_000, 10_000]))
    def time_passes(self, ms):
        self.clock.now += ms
        with self.device.change():
            self.device.advance()
        self._store()

    @rule()
    def restart(self):
        """What csd does at start: a device recovered from the stored records, the run left open
        aborted."""
        fresh = Device(self.clock, self.timings, serial=SERIAL)
        recovery = fresh.recover(self.device.snapshot(), self.device.events.query(),
                                 sorted(self.stored.values(), key=lambda r: r["number"]))
        holder = self.device.runs.listing()["runHolder"]
        if holder is None:
            assert recovery.aborted_run is None and fresh.runs.listing() == self.device.runs.listing()
        else:
            assert recovery.aborted_run["runId"] == holder["runId"]
            assert recovery.aborted_run["abortReason"] == "daemon restarted"
        self.device = fresh
        self._store()

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def at_most_one_open_run_and_it_holds_the_fabric(self):
        listed = self.device.runs.listing()
        open_runs = [r["runId"] for r in listed["runs"] if r["status"] == "OPEN"]
        assert len(open_runs) <= 1
        assert (listed["runHolder"] or {}).get("runId") == (open_runs[0] if open_runs else None)

    @invariant()
    def at_most_one_successful_program_per_run(self):
        started = Counter(e.details["runId"] for e in self.device.events.query("EventProgrammingStarted"))
        assert all(n == 1 for n in started.values()), started

    @invariant()
    def ended_runs_released_the_fabric(self):
        listed = self.device.runs.listing()
        for run in listed["runs"]:
            if run["status"] != "OPEN":
                assert run["endedAt"] is not None and run["leaseUntil"] is None and run["performance"] is not None
                assert (listed["runHolder"] or {}).get("runId") != run["runId"]
        if listed["runHolder"] is None:
            assert self.device.fabric() == "UNPROGRAMMED"

    @invariant()
    def every_sample_is_in_exactly_one_feeders_row(self):
        for run in self.device.runs.listing()["runs"]:
            assert sum(w["samples"] for w in run["workers"]) == run["totalSamples"]
            assert len([w for w in run["workers"] if w["role"] == "worker"]) <= run["workerSlots"]

    @invariant()
    def no_run_holds_the_fabric_outside_active(self):
        if self.device.lifecycle is not Lifecycle.ACTIVE:
            assert self.device.runs.listing()["runHolder"] is None

    @invariant()
    def the_timer_knows_every_deadline(self):
        holder = self.device.runs.listing()["runHolder"]
        deadline = self.device.next_deadline()
        if holder is not None:
            assert deadline is not None and deadline <= self.device.runs.show(holder["runId"])["leaseUntil"]
        if holder is None and self.device.system.pending_until is None:
            assert deadline is None

    @invariant()
    def every_run_event_names_a_known_run(self):
        for e in self.device.events.query("Event*ing*"):
            if "runId" in e.details:
                assert e.details["runId"] in self.run_ids


RunsMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestRuns = RunsMachine.TestCase
