"""``workbench server --workers N``: N server processes on one machine, one listening socket.

A PostgreSQL workspace can be served by many processes at once (each a stateless replica: its
own index, built from a snapshot and kept current from the change log; writes serialised in the
database). This supervisor binds the socket once and starts N ``workbench server`` processes that
inherit it (the kernel hands each new connection to one of them), gives them one owner token (so
the advert's token works whichever answers), advertises the address when all are listening, and:

- restarts a worker that dies (after a second; the others keep serving meanwhile),
- passes SIGHUP on (each worker reloads workbench.yaml),
- on SIGTERM or Ctrl-C passes it on, waits for the workers to finish what is in flight, and
  removes the advert.

A DuckDB workspace is one file held by one process: ``--workers`` above 1 is refused there. On
several machines, run ``workbench server`` on each (a workspace folder per machine whose
workbench.yaml names the same database) behind a load balancer.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .advert import read_advert, remove_advert, write_advert
from .logs import Log

OWNER_ENV = "WORKBENCH_SERVER_OWNER"  # the owner token, handed to the workers (never on a command line)
RESTART_PAUSE_S = 1.0
START_TIMEOUT_S = 300


def supervise(root: Path, *, workers: int, host: str, port: int, argv: list[str], quiet: bool) -> None:
    """Serve ``root`` with ``workers`` processes; ``argv``: the options every worker gets as well."""
    from ..errors import UserError
    from ..service import Workbench

    log = Log(quiet=quiet)
    running = read_advert(root)
    if running is not None and running.foreign is None:
        raise UserError(f"a workbench server already holds {root}: {running.url} (pid {running.pid})")
    with Workbench.open(root) as wb:
        if not wb.serves_replicas:
            raise UserError("--workers above 1 needs a workspace on PostgreSQL (store: in workbench.yaml): "
                            "a DuckDB file is held by one process")
        identity = wb.identity()
    listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                    backlog=2048)
    listener.set_inheritable(True)
    owner = "wbo_" + secrets.token_urlsafe(32)
    bound = listener.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    url = f"http://{shown}:{bound}"
    pool = _Workers(root, listener, owner, argv, log)
    stop = {"signal": None}

    def on_signal(sig, _frame) -> None:
        if sig == signal.SIGHUP:
            pool.send(signal.SIGHUP)
            log.info("reload_requested", workers=pool.count())
            return
        stop["signal"] = sig

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        for i in range(workers):
            pool.start(i)
        if not pool.wait_listening(workers, stop):
            raise UserError("the server workers did not start: see their log above")
        write_advert(root, url, owner, identity)
        log.info("listening", url=url, workspace=str(root), pid=os.getpid(), workers=workers)
        while stop["signal"] is None:
            pool.restart_dead(stop)
            time.sleep(0.2)
    finally:
        pool.send(signal.SIGTERM)
        pool.wait_all()
        remove_advert(root)
        listener.close()
        log.info("stopped", workspace=str(root), workers=workers)


class _Workers:
    def __init__(self, root: Path, listener: socket.socket, owner: str, argv: list[str], log: Log):
        self.root, self.listener, self.owner, self.argv, self.log = root, listener, owner, argv, log
        self.procs: dict[int, subprocess.Popen] = {}
        self.ready: dict[int, int] = {}  # worker slot -> the read end of its readiness pipe

    def start(self, slot: int) -> None:
        read, write = os.pipe()
        fd = self.listener.fileno()
        cmd = [sys.executable, "-m", "workbench", "--workspace", str(self.root), "server", *self.argv,
               "--worker-fd", str(fd), "--ready-fd", str(write)]
        env = {**os.environ, OWNER_ENV: self.owner}
        self.procs[slot] = subprocess.Popen(cmd, env=env, pass_fds=(fd, write), stdin=subprocess.DEVNULL)
        os.close(write)
        self.ready[slot] = read

    def wait_listening(self, count: int, stop: dict) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        for slot in range(count):
            if not self._await_ready(slot, deadline, stop):
                return False
        return True

    def _await_ready(self, slot: int, deadline: float, stop: dict) -> bool:
        import select

        read = self.ready.pop(slot)
        try:
            while time.monotonic() < deadline and stop["signal"] is None:
                if self.procs[slot].poll() is not None:
                    return False
                if select.select([read], [], [], 0.2)[0]:
                    return os.read(read, 1) == b"1"
            return False
        finally:
            os.close(read)

    def restart_dead(self, stop: dict) -> None:
        for slot, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None or stop["signal"] is not None:
                continue
            self.log.warn("worker_exited", pid=proc.pid, code=code, restarting_in_s=RESTART_PAUSE_S)
            time.sleep(RESTART_PAUSE_S)
            self.start(slot)
            if self._await_ready(slot, time.monotonic() + START_TIMEOUT_S, stop):
                self.log.info("worker_restarted", pid=self.procs[slot].pid)

    def send(self, sig: int) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    proc.send_signal(sig)
                except OSError:
                    pass

    def count(self) -> int:
        return sum(1 for p in self.procs.values() if p.poll() is None)

    def wait_all(self) -> None:
        deadline = time.monotonic() + 45
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
