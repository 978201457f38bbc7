"""The embedded csd's keeper: it runs csd and, once the shell that started it is gone however it
went (Ctrl-D, SIGHUP from a closed terminal, SIGKILL), stops csd and removes its temp directory.

    python -m csadmin.cli.lifeline FD DIR LOG -- CSD-COMMAND...

FD is this process's end of a socketpair whose other end only the shell holds. The kernel closes
that end when the shell's process ends, for any reason, so this process reads EOF: no signal
handler in the shell has to run. Then csd gets SIGTERM (SIGKILL if it has not stopped within
STOP_SECONDS), and DIR is removed. When csd ends by itself, this process says so on FD
(`exited CODE`, so the shell's start-up can report it) and still waits for the shell to go
before removing DIR (the shell may want csd's log from it).

Stdlib only, and started in a session of its own: the terminal's signals never reach it.
"""

from __future__ import annotations

import select
import shutil
import signal
import socket
import subprocess
import sys

STOP_SECONDS = 10.0
POLL_SECONDS = 0.2  # how often csd's own exit is noticed while the shell is there


def keep(lifeline: socket.socket, directory: str, log_path: str, command: list[str]) -> int:
    """Run `command` (csd) until `lifeline` reads EOF, then stop it and remove `directory`."""
    with open(log_path, "ab") as log:
        csd = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    told = False
    try:
        while True:
            readable, _, _ = select.select([lifeline], [], [], POLL_SECONDS)
            if readable and not lifeline.recv(4096):
                break  # EOF: the shell is gone (or has left)
            if csd.poll() is not None and not told:
                told = True
                try:
                    lifeline.sendall(f"exited {csd.returncode}\n".encode())
                except OSError:
                    break  # the shell went at the same moment
    finally:
        _stop(csd)
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _stop(csd: subprocess.Popen) -> None:
    if csd.poll() is not None:
        return
    csd.terminate()
    try:
        csd.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        csd.kill()
        csd.wait()


def main(argv: list[str]) -> int:
    fd, directory, log_path, dashes, *command = argv
    if dashes != "--" or not command:
        print("usage: python -m csadmin.cli.lifeline FD DIR LOG -- COMMAND...", file=sys.stderr)
        return 2
    # SIGTERM to the keeper (e.g. a test's cleanup, or a shutdown) stops csd the same way.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with socket.socket(fileno=int(fd)) as lifeline:
        return keep(lifeline, directory, log_path, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
