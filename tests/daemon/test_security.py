"""CURVE, roles and the audit log against a real csd: who gets in, what each role may do, what
is recorded, and that csd fails closed when its authenticator is gone."""

import json
import os
import signal
import stat
import struct
import subprocess
import sys

import pytest
import zmq

from csadmin import errors
from csadmin.shared import protocol
from csadmin.client import Client
from csadmin.shared.keyfile import write_key_file
from tests.harness import ROOT, Daemon, wait_until


def _audit(csd, max_count=50):
    with csd.client() as admin:
        return admin.audit_show(max_count=max_count)


def _fresh_keyfile(path, name="stranger"):
    public, secret = (k.decode() for k in zmq.curve_keypair())
    write_key_file(path, name, public, secret)
    return path


# -- who gets in ---------------------------------------------------------------------------------


def test_plaintext_client_gets_no_reply(csd):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                      | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
    sock.connect(csd.endpoint)
    try:
        sock.send(protocol.request("r1", "system.show"))
        assert monitor.poll(10_000, zmq.POLLIN), "no handshake outcome"
        event, _ = struct.unpack("=HI", monitor.recv_multipart()[0][:6])
        assert event != zmq.EVENT_HANDSHAKE_SUCCEEDED  # NULL meets CURVE: the handshake fails
        assert sock.poll(0, zmq.POLLIN) == 0
    finally:
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)
        ctx.term()
    # Nothing reached a handler: no log line names the request id (as a whole JSON string, since
    # the random server key in the "ready" line may hold the letters r1).
    assert '"r1"' not in csd.log()
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


def test_unknown_key_is_refused_at_the_handshake_and_audited(csd, tmp_path):
    stranger = _fresh_keyfile(str(tmp_path / "stranger.key_secret"))
    with pytest.raises(errors.PermissionDenied) as info:
        with csd.client(timeout=5, retries=0, key=stranger) as c:
            c.system_show()
    assert "refused this client's key" in info.value.message
    assert "connection_refused" in csd.log()
    refused = [e for e in _audit(csd) if e["op"] == "connect"]
    assert refused and refused[-1]["outcome"] == "REFUSED" and refused[-1]["name"] is None
    # The same through `cs`: exit code 5, and the message says what to do.
    r = csd.cs("system", "show", key=stranger)
    assert r.returncode == errors.EXIT_PERMISSION, r.stderr
    assert "csd keys add" in r.stderr


def test_wrong_server_key_gets_no_answer(csd):
    other_server_key = zmq.curve_keypair()[0].decode()
    with pytest.raises(errors.Unreachable):
        with Client(csd.endpoint, timeout=1.0, retries=0, server_key=other_server_key, key=csd.admin_key) as c:
            c.system_show()
    assert '"op": "system.show"' not in csd.log()  # no request reached a handler


def test_secret_key_files_are_0600_and_wider_ones_are_refused(csd, tmp_path):
    server_secret = csd.keys.server_secret_path
    for path in (csd.admin_key, server_secret, csd.keys.registry_path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    # `csd keys add` (the real CLI) under a permissive umask still makes a 0600 secret.
    out = str(tmp_path / "ops.key_secret")
    r = subprocess.run(
        [sys.executable, "-c", f"import os, sys; os.umask(0); from csadmin.daemon.main import main; "
                               f"sys.exit(main(['keys', 'add', 'ops', '--role', 'operator', '--state-dir', {csd.state_dir!r}, '--out', {out!r}]))"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert out in r.stdout and "CS_KEY" in r.stdout
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    # A client refuses to use a secret others can read (like ssh).
    os.chmod(out, 0o644)
    r = csd.cs("system", "show", key=out)
    assert r.returncode == errors.EXIT_PERMISSION
    assert "chmod 600" in r.stderr


def test_csd_refuses_a_server_secret_others_can_read(make_csd):
    d = make_csd()
    d.start()
    d.stop()
    os.chmod(d.keys.server_secret_path, 0o644)
    d.proc = subprocess.Popen(d.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    out, _ = d.proc.communicate(timeout=30)
    assert d.proc.returncode == 1
    assert b"chmod 600" in out


# -- roles ---------------------------------------------------------------------------------------


def test_whoami_names_the_key_and_its_role(csd):
    viewer = csd.add_key("dashboard", "viewer")
    with csd.client(key=viewer) as c:
        me = c.whoami()
        assert (me["name"], me["role"], me["session"]) == ("dashboard", "viewer", c.session)
    with csd.client() as c:
        assert {k: c.whoami()[k] for k in ("name", "role")} == {"name": "admin", "role": "admin"}


def test_viewer_reads_but_may_not_standby(csd):
    viewer = csd.add_key("dashboard", "viewer")
    with csd.client(key=viewer) as c:
        assert c.system_show()["state"] == "ACTIVE"
        assert c.execmode_show()["execmode"] == "PIPELINED"
        with pytest.raises(errors.PermissionDenied) as info:
            c.system_standby()
    assert "needs the admin role" in info.value.message and "viewer" in info.value.message
    r = csd.cs("system", "standby", "--no-confirm", key=viewer)
    assert r.returncode == errors.EXIT_PERMISSION == 5
    assert "needs the admin role" in r.stderr
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"  # nothing happened
    denials = [e for e in _audit(csd) if e["op"] == "system.standby"]
    assert [(e["name"], e["role"], e["outcome"]) for e in denials] == [("dashboard", "viewer", "PERMISSION_DENIED")] * 2


def test_operator_may_not_set_up_the_execution_mode(csd):
    runtime = csd.add_key("runtime-1", "operator")
    r = csd.cs("config", "execmode", "setup", "--mode", "weight-streaming", "--no-confirm", key=runtime)
    assert r.returncode == errors.EXIT_PERMISSION
    # The console names the command (csadmin/cli/terms.py); the audit below keeps the op.
    assert "config execmode setup needs the admin role" in r.stderr and "config.execmode.setup" not in r.stderr
    r = csd.cs("audit", "show", key=runtime)  # audit reads are for admins too
    assert r.returncode == errors.EXIT_PERMISSION
    entries = _audit(csd)
    denied = [e for e in entries if e["name"] == "runtime-1"]
    assert [(e["op"], e["outcome"]) for e in denied] == [
        ("config.execmode.setup", "PERMISSION_DENIED"), ("audit.show", "PERMISSION_DENIED")]
    assert json.loads(denied[0]["args"]) == {"mode": "weight-streaming"}


def test_admin_changes_are_audited_with_their_outcome(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        with pytest.raises(errors.InvalidArgument):
            c.execmode_setup("TURBO")
        c.execmode_setup("WEIGHT_STREAMING")
    r = csd.cs("config", "execmode", "setup", "--mode", "pipelined", "--no-confirm")
    assert r.returncode == 0
    entries = _audit(csd)
    assert [(e["name"], e["role"], e["op"], e["outcome"]) for e in entries] == [
        ("admin", "admin", "system.standby", "ok"),
        ("admin", "admin", "config.execmode.setup", "INVALID_ARGUMENT"),
        ("admin", "admin", "config.execmode.setup", "ok"),
        ("admin", "admin", "config.execmode.setup", "ok"),
    ]
    assert all(e["time"] > 0 for e in entries)
    # The audit log is durable: it survives kill -9.
    csd.kill9()
    csd.start()
    assert len(_audit(csd)) == 4
    r = csd.cs("audit", "show", "--max-count", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and "admin (admin)" in lines[0] and '{"mode":"pipelined"}' in lines[1]
    r = csd.cs("--output-format", "json", "audit", "show", "--max-count", "1")
    assert json.loads(r.stdout)["entries"][0]["op"] == "config.execmode.setup"


# -- revocation ----------------------------------------------------------------------------------


def test_revoked_key_is_refused_from_its_next_message(csd):
    runtime = csd.add_key("runtime-1", "operator")
    with csd.client(key=runtime) as c:
        assert c.whoami()["role"] == "operator"
        r = subprocess.run(
            [sys.executable, "-m", "csadmin.daemon", "keys", "revoke", "runtime-1", "--state-dir", csd.state_dir],
            capture_output=True, text=True, cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr
        # Same connection, next message: refused (the role is checked on every message).
        with pytest.raises(errors.PermissionDenied) as info:
            c.system_show()
        assert "not registered" in info.value.message
    # A new connection with that key is refused at the handshake.
    with pytest.raises(errors.PermissionDenied):
        with csd.client(key=runtime, timeout=5, retries=0) as c:
            c.system_show()
    assert [e["outcome"] for e in _audit(csd) if e["name"] == "runtime-1"] == ["PERMISSION_DENIED"]


def test_revocation_applies_to_the_very_next_message_while_csd_is_busy(csd):
    """csd checks the registry once per batch of received messages (not per message): with
    other clients keeping it busy, a key revoked and used at once (no sleep) is still refused,
    every time."""
    ctx = zmq.Context()
    flood = [csd.secure(ctx.socket(zmq.DEALER)) for _ in range(8)]
    poller = zmq.Poller()
    for sock in flood:
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(csd.endpoint)
        poller.register(sock, zmq.POLLIN)
    sent = 0

    def keep_busy():  # 8 reads in flight at all times, from another key
        nonlocal sent
        for sock, _ in poller.poll(0):
            sock.recv()
            sock.send(protocol.request(f"f{sent}", "system.show"))
            sent += 1

    try:
        for sock in flood:
            sock.send(protocol.request(f"f{sent}", "system.show"))
            sent += 1
        for attempt in range(20):
            name = f"revoked-{attempt}"
            key = csd.add_key(name, "operator")
            with csd.client(key=key, retries=0) as c:
                assert c.whoami()["role"] == "operator"
                keep_busy()
                csd.keys.revoke(name)
                with pytest.raises(errors.PermissionDenied) as info:
                    c.system_show()
                assert "not registered" in info.value.message
                keep_busy()
        assert sent > len(flood)
    finally:
        for sock in flood:
            sock.close(0)
        ctx.term()


def test_sighup_reloads_the_registry_and_keeps_serving(csd):
    csd.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: csd.log().count("key_registry_loaded") >= 2, what="the registry reload")
    with csd.client() as c:
        assert c.whoami()["role"] == "admin"
    assert csd.proc.poll() is None


# -- failing closed ------------------------------------------------------------------------------


def _switch_on(d: Daemon, fault: str) -> None:
    open(os.path.join(d.dir, fault), "w").close()


def _served_after_the_fault(d: Daemon) -> list[dict]:
    """Requests answered "ok" after the authenticator went down (there must be none)."""
    lines = [json.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    down = next(i for i, line in enumerate(lines) if line["event"] == "authenticator_down")
    assert lines[down]["level"] == "critical"
    return [line for line in lines[down:] if line.get("outcome") == "ok"]


def test_authenticator_crash_fails_closed(faulty_csd):
    d = faulty_csd.start()
    with d.client() as connected:
        assert connected.system_show()["state"] == "ACTIVE"
        _switch_on(d, "crash-authenticator")
        # A new connection, with a valid admin key, is refused: the handshake fails.
        with pytest.raises(errors.Internal):
            with d.client(timeout=5, retries=0) as c:
                c.system_show()
        # A connection made before the crash is refused too, and told why.
        with pytest.raises(errors.Internal) as info:
            connected.system_show()
        assert "authenticator is down" in info.value.message
        with pytest.raises(errors.Internal):
            connected.system_standby()
    assert d.proc.poll() is None  # still running, unhealthy, refusing
    r = d.cs("system", "show")
    assert r.returncode == errors.EXIT_INTERNAL
    assert _served_after_the_fault(d) == []


def test_authenticator_stopped_fails_closed(faulty_csd):
    d = faulty_csd.start()
    with d.client() as connected:
        assert connected.whoami()["name"] == "admin"
        _switch_on(d, "stop-authenticator")
        with pytest.raises(errors.Internal) as info:
            connected.system_show()
        assert "authenticator is down" in info.value.message
        # With the handler unbound, libzmq would admit anyone who knows the server key; csd's
        # ZAP_ENFORCE_DOMAIN makes the handshake fail instead, so no new connection gets in.
        # A generous deadline: csd closes the handler's socket at once, but libzmq unbinds it in its
        # own thread; a handshake that reaches the socket before then waits out libzmq's handshake
        # interval before the next attempt fails as it should.
        with pytest.raises(errors.Unreachable) as info:
            with d.client(timeout=60, retries=0) as c:
                c.system_show()
        assert "handshake" in info.value.message
    assert "stopped by tests/faulty_csd.py" in d.log()
    assert _served_after_the_fault(d) == []


def test_old_libzmq_is_refused(monkeypatch):
    from csadmin.daemon.auth import zap

    monkeypatch.setattr(zmq, "zmq_version_info", lambda: (4, 3, 2))
    monkeypatch.setattr(zmq, "zmq_version", lambda: "4.3.2")
    with pytest.raises(zap.SecurityError) as info:
        zap.check_libzmq()
    assert "4.3.2" in str(info.value) and "4.3.3" in str(info.value)


# -- transports ----------------------------------------------------------------------------------


def test_tcp_endpoint_with_curve_end_to_end(make_csd, monkeypatch):
    """A remote-style runtime: TCP on 127.0.0.1 (ephemeral ports), explicit endpoint and server
    key, no connection file; requests and the event stream are both CURVE."""
    # A 1 s standby leaves the subscription (a CURVE handshake on TCP) ample time to land
    # before the transition's last event.
    d = make_csd(endpoint="tcp://127.0.0.1:0", events_endpoint="tcp://127.0.0.1:0", standby_seconds=1.0).start()
    info = d.connection()
    assert info["endpoint"].startswith("tcp://127.0.0.1:") and not info["endpoint"].endswith(":0")
    for var in ("CS_CONNECT", "CS_ENDPOINT", "CS_SERVER_KEY", "CS_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CSD_RUNTIME_DIR", d.dir)  # no default connection file to fall back on
    operator = d.add_key("remote-runtime", "operator")
    with Client(info["endpoint"], timeout=10, server_key=info["server_key"], key=operator) as c:
        me = c.whoami()
        assert (me["name"], me["role"]) == ("remote-runtime", "operator")
        assert c.events_endpoint() == info["events_endpoint"]
        sub = c.subscribe()
        try:
            with d.client() as admin:
                admin.system_standby()
            # PUB/SUB joins asynchronously (more so with a CURVE handshake on TCP), so the first
            # events may be published before the subscription lands: what arrives is the tail
            # of the standby sequence, in order, ending with its completion.
            sequence = [b"EventStandbyIssued", b"EventPendingStandby", b"EventEnteredStandby", b"EventStandbyCompleted"]
            seen = []
            while not seen or seen[-1] != b"EventStandbyCompleted":
                assert sub.poll(10_000, zmq.POLLIN), f"no event over CURVE; saw {seen}"
                seen.append(sub.recv_multipart()[0])
            assert seen == sequence[-len(seen):]
        finally:
            sub.close(0)
        assert c.wait_for(state="STANDBY", timeout=10)["state"] == "STANDBY"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    r = subprocess.run(
        [sys.executable, "-m", "csadmin", "--endpoint", info["endpoint"], "--server-key", info["server_key"],
         "--key", d.admin_key, "--output-format", "json", "system", "show"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["state"] == "STANDBY"


def _handshake_outcome(csd, sock_type, endpoint, key):
    """Connect a raw CURVE socket with `key`; return the first handshake event and its value."""
    ctx = zmq.Context()
    sock = csd.secure(ctx.socket(sock_type), key=key)
    sock.setsockopt(zmq.LINGER, 0)
    monitor = sock.get_monitor_socket(
        zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    try:
        sock.connect(endpoint)
        assert monitor.poll(10_000, zmq.POLLIN), "no handshake outcome"
        return struct.unpack("=HI", monitor.recv_multipart()[0][:6])
    finally:
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)
        ctx.term()


def test_only_registered_keys_may_subscribe_to_events(csd, tmp_path):
    events_endpoint = csd.connection()["events_endpoint"]
    stranger = _fresh_keyfile(str(tmp_path / "stranger.key_secret"))
    viewer = csd.add_key("dashboard", "viewer")
    assert _handshake_outcome(csd, zmq.SUB, events_endpoint, stranger) == (zmq.EVENT_HANDSHAKE_FAILED_AUTH, 400)
    assert _handshake_outcome(csd, zmq.SUB, events_endpoint, viewer)[0] == zmq.EVENT_HANDSHAKE_SUCCEEDED


def test_embedded_quick_start_makes_its_own_keys():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    r = subprocess.run(
        [sys.executable, "-m", "csadmin", "--embedded", "--output-format", "json", "system", "show"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["state"] == "ACTIVE"


def test_every_op_refuses_a_role_below_its_own_and_a_revoked_key(csd):
    """Not only the first call: every op checks the caller's role on every message. A key below
    an op's role, and a key revoked while its connection stays open, get PERMISSION_DENIED
    from each op (before its arguments are even looked at), and csd's state does not move."""
    from csadmin.daemon.commands import COMMANDS
    from csadmin.daemon.auth.key_registry import RANK

    keys = {role: csd.add_key(f"k-{role}", role) for role in ("viewer", "operator")}
    doomed = csd.add_key("k-doomed", "admin")
    with csd.client() as admin:
        before = admin.system_show()
    for role, key in keys.items():
        with csd.client(key=key) as c:
            for op, command in sorted(COMMANDS.items()):
                if RANK[command.SPEC.role] <= RANK[role]:
                    continue
                with pytest.raises(errors.PermissionDenied, match=f"needs the {command.SPEC.role} role"):
                    c.call(op)
    with csd.client(key=doomed) as c:
        assert c.whoami()["role"] == "admin"
        r = subprocess.run(
            [sys.executable, "-m", "csadmin.daemon", "keys", "revoke", "k-doomed", "--state-dir", csd.state_dir],
            capture_output=True, text=True, cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr
        for op in sorted(COMMANDS):
            with pytest.raises(errors.PermissionDenied, match="not registered"):
                c.call(op)
    with csd.client() as admin:
        after = admin.system_show()
    assert {k: after[k] for k in ("state", "activeExecmode", "seq")} == {k: before[k] for k in ("state", "activeExecmode", "seq")}
