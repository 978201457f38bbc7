"""Starting csd: everything that happens before it answers anyone, in order.

1. The state store is opened and checked (daemon/store/store.py, daemon/store/identity.py), and the model
   recovers from it in one call (Device.recover: a transition a stop interrupted is rolled
   forward, the run left open is aborted); what recovery did is committed at once.
2. csd's keypair and the key registry; the ZAP authenticator, bound before any CURVE socket
   (daemon/auth/zap.py says why).
3. The sockets bound (daemon/serve/sockets.py), the connection gate (daemon/serve/capacity.py), the metrics
   listener when `metrics_endpoint` is set (daemon/metrics/no_metrics.py), and the connection file written.
Only then does the loop (daemon/process/server.py) serve, and systemd hear READY=1. `Booted.close()`
undoes it all in reverse at a clean stop.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import zmq

from csadmin import __version__
from csadmin.shared import connection, ops
from csadmin.shared.opargs import Args
from csadmin.statemachine.defaults import EVENTS_IN_MEMORY, KEEP_RUNS, Timings
from csadmin.statemachine.device import Device
from csadmin.statemachine.faults.state import text_digest

from ..auth.key_registry import KeyStore, Registry
from ..auth.zap import Authenticator, check_libzmq
from ..serve.audit import AuditTrail
from ..serve.capacity import ConnectionGate
from ..serve.context import Context
from ..serve.dispatch import Dispatcher
from ..serve.sockets import Sockets, bind
from ..store.store import Store
from .config import Config, read_scenario
from .metrics_start import start as start_metrics
from .mmap_threshold import release_large_blocks


def wall_ms() -> int:
    """The device's clock: milliseconds since the epoch."""
    return int(time.time() * 1000)


@dataclass
class Booted:
    """What the loop serves with."""

    store: Store
    audit: AuditTrail
    device: Device
    registry: Registry
    ctx: zmq.Context
    auth: Authenticator
    sockets: Sockets
    gate: ConnectionGate
    dispatcher: Dispatcher
    connection_file: str
    log: object
    metrics: object  # daemon/metrics/metric_set.py's Metrics, or metrics/no_metrics.py's NO_METRICS
    metrics_listener: object | None

    def close(self) -> None:
        """A clean stop, in the reverse order of boot()."""
        connection.remove(self.connection_file)
        if self.metrics_listener is not None:
            self.metrics_listener.close()
        self.audit.flush()
        self.gate.close()
        self.sockets.close()
        self.auth.close()  # last: nothing it guards is open any more
        self.ctx.term()
        self.sockets.remove_files()
        try:
            self.store.close()  # records the clean stop (and damage, if that is why) in csd.identity
        except OSError as exc:
            self.log.error("identity_write_failed", path=self.store.identity.path, reason=str(exc))


def boot(config: Config, log) -> Booted:
    """Recover the state, then bind: on return csd may answer anyone. Raises what stops it
    (StoreError says what to do; a bind error names the endpoint)."""
    check_libzmq()
    release_large_blocks()
    # What recovery reads is read (and checked) before the store is written to at all.
    store = Store(config.state_dir, keep_events=config.keep_events, preload=(EVENTS_IN_MEMORY, KEEP_RUNS))
    try:
        return _start(config, log, store)
    except BaseException:
        # A start that fails once the store is open (a taken port, say) still closes it: SQLite
        # folds the write-ahead log into the database and removes it, and csd.identity must record
        # that stop as clean, or the next start takes the missing log for one lost in a crash.
        with contextlib.suppress(OSError):
            store.close()
        raise


def _start(config: Config, log, store: Store) -> Booted:
    """boot() once the store is open: recover, then bind."""
    audit = AuditTrail(store, log)
    device, replies = _recover(config, store, log)

    keys = KeyStore(config.state_dir)
    server_public, server_secret = keys.ensure_server_keypair()
    registry = Registry(keys.registry_path, log)
    ctx = zmq.Context()
    observed: list = []  # the metric set, once it exists (a handshake may be refused before)

    def refused_handshake(*args) -> None:
        audit.refused_handshake(*args)
        if observed:
            observed[0].observe_denial("handshake")

    auth = Authenticator(ctx, registry, log, on_denied=refused_handshake)
    auth.start()
    sockets = bind(ctx, config, server_secret, log)
    gate = ConnectionGate([sockets.router, sockets.pub], log, ctx)
    metrics, listener = start_metrics(config.metrics_endpoint, device.show(), log, descriptors=gate.headroom // 8)
    observed.append(metrics)
    connection_file = config.connection_file or connection.file_beside(config.endpoint) or connection.default_file()
    connection.write(connection_file, sockets.endpoint, sockets.events_endpoint, server_public, device.serial,
                     metrics_url=listener.bound.url if listener is not None else "")

    context = Context(device, sockets.events_endpoint, wall_ms(), __version__,
                      tcp_events_endpoint=sockets.tcp.get("tcp_events_endpoint", ""),
                      audit_entries=audit.entries, events=store.events,  # audit.show sees the records still being batched
                      metrics=metrics)

    def publish(event: dict) -> None:  # every event, once durable
        sockets.publish(event)
        metrics.observe_event(event)

    dispatcher = Dispatcher(context, store, publish, log, auth, replies, audit_trail=audit, metrics=metrics)
    log.info(
        "ready", endpoint=sockets.endpoint, events_endpoint=sockets.events_endpoint, **sockets.tcp,
        state_dir=config.state_dir, connection_file=connection_file, server_key=server_public,
        state=device.system.lifecycle.value, execmode=device.system.active_mode.value, seq=device.events.last_seq,
    )
    return Booted(store, audit, device, registry, ctx, auth, sockets, gate, dispatcher, connection_file, log,
                  metrics, listener)


def _recover(config: Config, store: Store, log) -> tuple[Device, list]:
    """The device as the store kept it, with what a stop interrupted resolved and committed;
    and the kept replies (for retries across the restart)."""
    (snapshot, events, replies), runs = store.preloaded
    timings = Timings(
        int(config.activate_seconds * 1000), int(config.standby_seconds * 1000),
        lease_ms=max(1, int(config.lease_seconds * 1000)), program_bytes_per_second=config.program_bytes_per_second,
    )
    device = Device(wall_ms, timings, serial=config.serial,
                    events_in_memory=min(EVENTS_IN_MEMORY, config.keep_events))
    recovery = device.recover(snapshot, events, runs)
    if recovery.rolled_forward is not None:
        log.warning("transition_rolled_forward", state=recovery.rolled_forward.value)
    if recovery.aborted_run is not None:
        log.warning("run_aborted_at_start", run_id=recovery.aborted_run["runId"], owner=recovery.aborted_run["owner"])
    if recovery.needs_commit:
        store.commit(device.snapshot(), recovery.events, runs=recovery.runs)
        device.run_book.saved(recovery.runs)
    _load_scenario(config, device, store, log)
    store.record_progress(force=True)
    return device, replies


def _load_scenario(config: Config, device: Device, store: Store, log) -> None:
    """Load `faults_scenario` (`csd --faults FILE`), anchored at this start, unless the state
    already has that very scenario (same file, same text): then a restart, a crash included,
    carries on with it rather than replaying it from the start."""
    if not config.faults_scenario:
        return
    text, source = read_scenario(config.faults_scenario)  # checked when the config was loaded
    loaded = device.faults.scenario()
    if loaded is not None and loaded["source"] == source and loaded["digest"] == text_digest(text):
        log.info("fault_scenario_kept", source=source, runs_opened=loaded["runsOpened"])
        return
    with device.change() as change:
        # csd's own request: its file was read and checked when the config was loaded.
        request = Args(ops.SYSTEM_FAULT_SCENARIO.args, {"text": text, "source": source})
        result = device.load_scenario(request, origin={"name": "csd --faults", "session": ""})
    store.commit(device.snapshot(), change.events, runs=change.dirty_runs())
    device.run_book.saved(change.dirty_runs())
    log.warning("fault_scenario_loaded", source=source, steps=result["steps"],
                effect="simulated faults will be injected on this schedule (their events say injected=true)")
