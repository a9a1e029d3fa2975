"""Run the team server: open the workspace for many threads, warm the index, listen (uvicorn),
advertise the address (and the workspace's identity) in the workspace folder, on SIGHUP read
workbench.yaml again, and on SIGTERM or Ctrl-C stop taking requests, finish the ones in flight
(writes included), remove the advert and close the workspace."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
from pathlib import Path
from typing import Callable

from .advert import read_advert, remove_advert, write_advert
from .limits import REQUEST_TIMEOUT_S
from .logs import Log, route_logging
from .protocol import MAX_CONNECTIONS
from .workers import OWNER_ENV

GRACE_S = 30


SWITCH_INTERVAL_S = 0.0005
# How long an idle client connection stays open. uvicorn's 5 s equals httpx's (and many pools')
# own idle expiry, so a client reusing a connection at second 5 raced the server closing it and
# got a read error (seen under load). Longer than the clients': they close first, as they should.
KEEP_ALIVE_S = 75


def serve(workspace: str | None, *, host: str, port: int, api, route_output: Callable[[], None],
          quiet: bool = False, allow_hosts: tuple[str, ...] = (), allow_origins: tuple[str, ...] = (),
          request_timeout: float = REQUEST_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS,
          worker_fd: int | None = None, ready_fd: int | None = None) -> None:
    """Serve the workspace. ``worker_fd``: this process is one of ``--workers`` (workers.py): it
    serves the supervisor's socket, with the supervisor's owner token, and says it is listening by
    writing to ``ready_fd``; the supervisor keeps the advert."""
    import uvicorn

    from ..config import resolve_workspace
    from ..errors import UserError
    from ..service import Workbench
    from .app import build_app
    from .edge import AllowList
    from .protocol import protocol_class

    root = resolve_workspace(workspace)
    running = read_advert(root) if worker_fd is None else None
    if running is not None and running.foreign is None:  # a copy's inherited advert does not hold this one
        raise UserError(f"a workbench server already holds {root}: {running.url} (pid {running.pid})")
    log = Log(quiet=quiet)
    wb = Workbench.open(root)
    try:
        wb.share()
        log.info("warming", workspace=str(root))
        wb.warm()
        wb.index.load_model()  # the first search must not pay for it
        wb.warm_writes()  # nor the first edit
        wb.checkpoint_if_due()  # what warming wrote (a lexical index: tens of MB of log), before any request
        route_logging(log)  # uvicorn's, the MCP SDK's and asyncio's records too: JSON lines, warnings and up
        owner = os.environ.pop(OWNER_ENV, "") if worker_fd is not None else ""
        owner = owner or "wbo_" + secrets.token_urlsafe(32)
        route_output()
        _tune_for_serving()
        allow = AllowList(hosts=(*wb.config.allowed_hosts, *allow_hosts),
                          origins=(*wb.config.allowed_origins, *allow_origins), bound=host)
        if host in ("0.0.0.0", "::", "") and not allow.hosts:
            log.warn("loopback_hosts_only", host=host, hint="bound to every address, but only loopback Host names "
                     "are answered: add the names clients use with --allow-host or server.allowed_hosts")
        app, _ = build_app(wb, api=api, owner_token=owner, log=log, allow=allow,
                           request_timeout=request_timeout)
        connections = _connection_cap(max_connections, log)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=GRACE_S, server_header=False,
                                timeout_keep_alive=KEEP_ALIVE_S, ws="none", log_config=None,
                                http=protocol_class(request_timeout=request_timeout, max_connections=connections))
        server = _Server(config)
        # a worker serves the supervisor's socket, made here with its real family (uvicorn's fd= makes
        # it AF_UNIX, and asyncio then leaves Nagle on: 40 ms of delayed ACK on every answer)
        inherited = [socket.socket(fileno=worker_fd)] if worker_fd is not None else None
        asyncio.run(_run(server, root, host, owner, log, wb, ready_fd=ready_fd, sockets=inherited))
    finally:
        if worker_fd is None:
            remove_advert(root)
        wb.close()  # (a shared store checkpoints a log over 4 MB first)
        log.info("stopped", workspace=str(root))


def reload_config(wb, log: Log) -> None:
    """SIGHUP: read workbench.yaml again (principals, their memberships and grants, limits); a file
    that does not load is logged and the running configuration kept. The embedder, the bound
    address and the Host/Origin allow-lists stay as started (a restart changes them)."""
    from ..errors import WorkbenchError

    try:
        changed = wb.reload_config()
    except WorkbenchError as e:
        log.emit("error", "config_reload_failed", error=e.message, kept="the configuration loaded before")
        return
    except Exception as e:  # a bug must not end the server: log it, keep serving
        log.emit("error", "config_reload_failed", error=f"{type(e).__name__}: {e}", kept="the configuration loaded before")
        return
    log.info("config_reloaded", **changed)


def _connection_cap(wanted: int, log: Log) -> int:
    """``wanted``, or less when this process may not open that many files: the workspace, the
    model and the log need some of its descriptors too (a connection is one)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return wanted
    spare = soft - 128
    if soft != resource.RLIM_INFINITY and wanted > spare:
        log.emit("warning", "max_connections_lowered", wanted=wanted, allowed=max(spare, 8), open_files_limit=soft)
        return max(spare, 8)
    return wanted


def _tune_for_serving() -> None:
    """Interpreter settings for a process that answers many small requests on threads.

    - The switch interval: a thread that wants the GIL waits up to this long for the running one
      to hand it over. At Python's 5 ms, the event loop thread (which reads every request and
      writes every answer, several hand-overs each) queued behind the worker threads: under
      load (issue 14, 10k fragments, 20 requests/s) search p50 went from 70 to 40 ms at 0.5 ms.
    - The garbage collector: what warming built (the index, the model, every module) is frozen
      out of the collector, so a full collection walks only what requests allocate (gen-2
      passes over everything took 50-220 ms, stalling every request at once)."""
    import gc
    import sys

    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, which would end the
        process before the advert is removed and the workspace closed: handle them here instead."""

        @contextlib.contextmanager
        def capture_signals(self):
            yield

    return Server


def _Server(config):
    return _server_class()(config)


async def _run(server, root: Path, host: str, owner: str, log: Log, wb, *, ready_fd: int | None = None,
               sockets: list | None = None) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.handle_exit, sig, None)  # 1st: finish in-flight requests; 2nd: now
    loop.add_signal_handler(signal.SIGHUP, lambda: loop.run_in_executor(None, reload_config, wb, log))
    task = asyncio.create_task(server.serve(sockets=sockets))
    while not server.started:
        if task.done():
            await task  # failed to start (port in use): its error, and no advert
            return
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    url = f"http://{shown}:{port}"
    if ready_fd is not None:  # a worker: the supervisor advertises
        os.write(ready_fd, b"1")
        os.close(ready_fd)
        log.info("worker_listening", url=url, workspace=str(root), pid=os.getpid())
    else:
        write_advert(root, url, owner, wb.identity())
        log.info("listening", url=url, workspace=str(root), pid=os.getpid())
    await task
