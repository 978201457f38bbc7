"""A throwaway Debian system booted under a real systemd, for tests of the shipped unit.

systemd runs as PID 1 of new pid, mount, uts, ipc, net and cgroup namespaces (systemd-nspawn,
private network: loopback only). Its root is an overlay whose lower layer is the host's `/` and
whose upper layer is a tmpfs: the container has the host's packages, and every write it makes
lands in the tmpfs and is gone with it. nspawn itself runs in a private mount namespace with a
tmpfs on /run (where it keeps its own state) and in a cgroup of ours (where it makes its
`payload`/`supervisor` cgroups), removed afterwards. `HostSnapshot` checks the host kept nothing.

Driven from outside with `nsenter … systemctl …`; killed by the PID of its PID 1.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from tests.harness import wait_until

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CGROUP_ROOT = "/sys/fs/cgroup"

# Runs as root on the host. $1: the (empty) directory to mount the tmpfs on, $2: machine name,
# $3: machine id, $4…: cgroup.procs files to join first. `basic.target` rather than the host's
# default: the container then starts systemd's own services (journald, tmpfiles, …) but not
# whatever the host happens to have enabled (databases, schedulers), which only slows the boot.
BOOT_SCRIPT = r"""
set -eu
dir=$1 name=$2 id=$3
shift 3
for procs in "$@"; do echo $$ > "$procs"; done
exec unshare --mount --propagation private -- sh -euc '
    mount -t tmpfs -o mode=0755 csd-boot-run /run
    mount -t tmpfs -o mode=0700 csd-boot "$1"
    mkdir "$1/upper" "$1/work" "$1/root"
    mount -t overlay -o lowerdir=/,upperdir="$1/upper",workdir="$1/work" csd-boot "$1/root"
    exec systemd-nspawn --directory="$1/root" --machine="$2" --uuid="$3" --boot --register=no \
        --keep-unit --private-network --link-journal=no --console=read-only -- systemd.unit=basic.target
' boot "$dir" "$name" "$id"
"""


def unavailable() -> str | None:
    """Why a container cannot be booted here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, mounts and cgroups)"
    for tool in ("systemd-nspawn", "unshare", "nsenter", "setpriv"):
        if shutil.which(tool) is None:
            hint = " (apt-get install systemd-container; .ci/run does)" if tool == "systemd-nspawn" else ""
            return f"{tool} is not installed{hint}"
    if not os.path.exists("/lib/systemd/systemd"):
        return "systemd is not installed"
    if not os.access("/usr/bin/python3", os.X_OK):
        return "Debian's /usr/bin/python3 is not installed"
    probe = subprocess.run(["unshare", "--mount", "--pid", "--net", "--uts", "--ipc", "--cgroup", "--fork",
                            "--propagation", "private", "sh", "-c", "mount -t tmpfs probe /mnt"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"cannot make namespaces or mount in them here: {probe.stderr.strip()}"
    if not _cgroup_parents():
        return "no writable cgroup hierarchy to run the container in"
    return None


def _cgroup_parents() -> list[str]:
    """The directories of this process's cgroups that nspawn uses (name=systemd and the unified
    hierarchy), where ours go."""
    parents = []
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers == "name=systemd":
                base = os.path.join(CGROUP_ROOT, "systemd")
            elif controllers == "":
                unified = os.path.join(CGROUP_ROOT, "unified")
                base = unified if os.path.ismount(unified) else CGROUP_ROOT
            else:
                continue
            parent = base + path.rstrip("/")
            if os.access(parent, os.W_OK):
                parents.append(parent)
    return parents


class Container:
    """One booted container. `run()` a shell script in it (as root or a user), `spawn()` one in
    the background, `host_path()` to put files into it, `destroy()` when done."""

    def __init__(self, workdir: str):
        self.workdir = workdir  # the host directory for its console log
        self.name = "csd-boot-" + uuid.uuid4().hex[:8]
        self.log_path = os.path.join(workdir, "console.log")
        self.mount_dir: str | None = None
        self.cgroups: list[str] = []
        self.nspawn: subprocess.Popen | None = None
        self.pid1: int | None = None

    # -- life cycle --------------------------------------------------------------------------

    def boot(self, timeout: float = 180.0) -> "Container":
        self.mount_dir = _mkdtemp_in_tmp()
        for parent in _cgroup_parents():
            path = os.path.join(parent, self.name)
            os.mkdir(path)
            self.cgroups.append(path)
        with open(self.log_path, "wb") as log:
            self.nspawn = subprocess.Popen(
                ["bash", "-c", BOOT_SCRIPT, "boot", self.mount_dir, self.name, uuid.uuid4().hex,
                 *(os.path.join(c, "cgroup.procs") for c in self.cgroups)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

        def booted():
            done = self.run("systemctl is-system-running --wait", check=False, timeout=timeout)
            return done.stdout.strip() in ("running", "degraded")

        try:
            self.pid1 = wait_until(self._find_pid1, timeout=60, interval=0.05, what="the container's PID 1")
            wait_until(booted, timeout=timeout, interval=0.2, what="the container to boot")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.console()}") from None
        return self

    def _find_pid1(self) -> int | None:
        if self.nspawn.poll() is not None:
            raise AssertionError(f"systemd-nspawn exited with {self.nspawn.returncode}")
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status") as f:
                    status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
            except OSError:
                continue
            if status.get("PPid", "").strip() == str(self.nspawn.pid) and status.get("NSpid", "").split()[-1:] == ["1"]:
                return int(entry)
        return None

    def destroy(self) -> None:
        """Kill PID 1 (and with it every process in the container), wait for nspawn, and remove
        what was made on the host for it: its cgroups and the empty mount point."""
        if self.pid1 is not None:
            try:
                os.kill(self.pid1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pid1 = None
        if self.nspawn is not None:
            try:
                self.nspawn.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.nspawn.kill()
                self.nspawn.wait(timeout=60)
        for cgroup in self.cgroups:
            wait_until(lambda: _remove_cgroup_tree(cgroup), timeout=30, interval=0.1,
                       what=f"the container's processes to leave {cgroup}")
        self.cgroups = []
        if self.mount_dir is not None:
            os.rmdir(self.mount_dir)  # empty: the tmpfs was mounted in nspawn's namespace only
            self.mount_dir = None

    def console(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "console (last lines):\n" + "".join(f.readlines()[-40:])
        except OSError:
            return ""

    # -- driving it ----------------------------------------------------------------------------

    def command(self, script: str, user: str = "root", env: dict | None = None) -> list[str]:
        """argv running `script` with bash in the container, as `user` (with that user's groups
        from the container's /etc/group, as a fresh login would have) and a clean environment."""
        home = "/root" if user == "root" else f"/home/{user}" if user != "csd" else "/var/lib/csd"
        environment = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": home, "USER": user, "LOGNAME": user, **(env or {})}
        argv = ["nsenter", f"--target={self.pid1}", "--all", "--root", "--wd", "--"]
        if user != "root":
            argv += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
        return argv + ["env", "-i", *(f"{k}={v}" for k, v in environment.items()), "bash", "-c", script]

    def run(self, script: str, user: str = "root", check: bool = True, timeout: float = 120.0,
            env: dict | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(self.command(script, user, env), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise AssertionError(f"in the container, as {user}: {script}\nexit {done.returncode}\n"
                                 f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
        return done

    def spawn(self, script: str, user: str = "root", log: str | None = None) -> subprocess.Popen:
        """Start `script` in the background; stop it with `stop()` (a signal to its process group)."""
        out = open(log, "wb") if log else subprocess.DEVNULL
        try:
            return subprocess.Popen(self.command(script, user), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if log:
                out.close()

    @staticmethod
    def stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout)
            raise AssertionError(f"{proc.args[-1]!r} did not stop on signal {sig} within {timeout} s") from None

    @staticmethod
    def descendant(proc: subprocess.Popen, argv0: str) -> int:
        """The host PID of the process below `proc` (a `spawn()`) whose command line has `argv0`."""
        def children(pid):
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    return [int(c) for c in f.read().split()]
            except OSError:
                return []

        todo = children(proc.pid)
        while todo:
            pid = todo.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if argv0.encode() in f.read().split(b"\0"):
                        return pid
            except OSError:
                pass
            todo += children(pid)
        raise AssertionError(f"no {argv0} below {proc.args[-1]!r}")

    def host_path(self, path: str) -> str:
        """Where the container's `path` is, seen from the host (to copy files in or read them)."""
        return f"/proc/{self.pid1}/root{path}"

    def namespaces_differ_from_the_hosts(self) -> dict[str, bool]:
        return {ns: os.readlink(f"/proc/{self.pid1}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
                for ns in ("pid", "mnt", "uts", "ipc", "net", "cgroup")}


def _mkdtemp_in_tmp() -> str:
    return tempfile.mkdtemp(prefix="csd-boot-", dir="/tmp")


def _remove_cgroup_tree(top: str) -> bool:
    """rmdir a cgroup and its children, deepest first; False while a process is still in one."""
    if not os.path.exists(top):
        return True
    for root, dirs, _ in os.walk(top, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except FileNotFoundError:
                pass
            except OSError:
                return False
    try:
        os.rmdir(top)
    except OSError:
        return False
    return True


class HostSnapshot:
    """What the container must leave as it was on the host: the mount table, the cgroups beside
    ours, /run/systemd (nspawn's state), /tmp (which systemd-tmpfiles would clean, had the
    container reached it), and the files the documented install writes."""

    INSTALL_PATHS = ("/etc/csd", "/var/lib/csd", "/run/csd", "/opt/csd", "/usr/local/bin/csd", "/usr/local/bin/cs",
                     "/etc/sysusers.d/csd.conf", "/etc/systemd/system/csd.service", "/home/alice", "/home/bob")
    USERS = ("csd", "alice", "bob")  # made in the container: never in the host's user database
    USER_FILES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow")
    HASHED = ("/etc/machine-id",)
    # What systemd makes in a /tmp it manages: none of it may appear in the host's.
    SYSTEMD_TMP_NAMES = ("systemd-private-", ".X11-unix", ".ICE-unix", ".XIM-unix", ".font-unix", ".Test-unix")

    def __init__(self, cgroup_name: str):
        self.cgroup_name = cgroup_name  # the container's, under this process's cgroups
        # An old file and an old directory in /tmp, as tmpfiles' age-based cleaning would take.
        self.sentinel_dir = _mkdtemp_in_tmp()
        self.sentinel_file = os.path.join(self.sentinel_dir, "old-file")
        with open(self.sentinel_file, "w") as f:
            f.write("the host's /tmp must survive the container\n")
        month_ago = time.time() - 30 * 86400
        for path in (self.sentinel_file, self.sentinel_dir):
            os.utime(path, (month_ago, month_ago))
        self.state = self._read()

    def _read(self) -> dict:
        with open("/proc/self/mountinfo") as f:
            mounts = f.read()
        # Another run of these tests may have its csd-boot-* cgroup beside ours: not ours to judge.
        cgroups = {p: sorted(n for n in os.listdir(p) if not n.startswith("csd-boot-") or n == self.cgroup_name)
                   for p in _cgroup_parents()}
        run_systemd = sorted(
            os.path.join(root, name) for root, dirs, files in os.walk("/run/systemd") for name in dirs + files
        )
        tmp = set(os.listdir("/tmp"))
        installed = {p: os.path.lexists(p) for p in self.INSTALL_PATHS}
        for path in self.USER_FILES:
            try:
                with open(path) as f:
                    names = {line.split(":")[0] for line in f}
            except FileNotFoundError:
                names = set()
            installed.update({f"{path}: {user}": user in names for user in self.USERS})
        hashes = {}
        for p in self.HASHED:
            try:
                with open(p, "rb") as f:
                    hashes[p] = hashlib.sha256(f.read()).hexdigest()
            except FileNotFoundError:
                hashes[p] = None
        return {"mounts": mounts, "cgroups": cgroups, "/run/systemd": run_systemd, "installed": installed,
                "hashes": hashes, "tmp": tmp}

    def changes(self, mount_dir_name: str) -> list[str]:
        """What differs from the snapshot, in words; [] when the host is as it was."""
        now = self._read()
        found = []
        for key, split in (("mounts", str.splitlines), ("/run/systemd", list)):
            before, after = set(split(self.state[key])), set(split(now[key]))
            if before != after:
                found.append(f"{key} changed: new {sorted(after - before)}, gone {sorted(before - after)}")
        for key in ("cgroups", "installed", "hashes"):
            if now[key] != self.state[key]:
                found.append(f"{key} changed:\n  before: {self.state[key]}\n  after:  {now[key]}")
        if not os.path.exists(self.sentinel_file):
            found.append(f"{self.sentinel_file} (a month old) is gone from the host's /tmp")
        new_in_tmp = now["tmp"] - self.state["tmp"]
        systemds = sorted(n for n in new_in_tmp if n.startswith(self.SYSTEMD_TMP_NAMES))
        if systemds:
            found.append(f"systemd's files appeared in the host's /tmp: {systemds}")
        if mount_dir_name in now["tmp"]:
            found.append(f"/tmp/{mount_dir_name} (the container's mount point) is still there")
        return found

    def remove_sentinel(self) -> None:
        shutil.rmtree(self.sentinel_dir, ignore_errors=True)
