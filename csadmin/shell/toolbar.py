"""The bottom toolbar: the system's live state, kept current by the watcher."""

from __future__ import annotations

import time

from .live import LiveState


def toolbar_text(live: LiveState, now_ms: int | None = None) -> str:
    named = f" {live.system} │" if live.system else ""  # the inventory's name of the system in use
    if not live.connected:
        return f"{named} csd unreachable at {live.endpoint} — reconnecting… "
    snap = live.snapshot
    if snap is None:
        return f"{named} connecting… "
    state = snap["state"]
    if snap.get("pendingUntil"):
        # Count down on our clock from the daemon's answer, so the toolbar moves between events.
        left = max(0.0, (snap["pendingUntil"] - snap["time"]) / 1000 - (time.monotonic() - live.received_at))
        state += f" ({left:.1f} s)"
    mode = snap["activeExecmode"]
    if snap["configuredExecmode"] != mode:
        mode += f" → {snap['configuredExecmode']} on activate"
    holder = snap.get("runHolder")
    fabric = f"run {holder['runId']} ({holder['owner']})" if holder else "free"
    workers = holder.get("workers", 0) if holder else 0  # input workers feeding it (issue #15)
    if workers:
        fabric += f", {workers} worker{'s' if workers != 1 else ''}"
    active = sum(1 for f in snap.get("activeFaults") or () if f.get("status") == "active")
    faults = f" ({active} fault{'s' if active != 1 else ''})" if active else ""
    return f"{named} {snap['serial']} │ {state} │ systemHealth {snap['systemHealth']}{faults} │ {mode} │ fabric {fabric} "
