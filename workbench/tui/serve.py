"""`workbench serve`: the TUI in a browser through textual-serve, with the lifecycle it leaves out.

textual-serve (1.1.3) starts one app process per browser connection and relays its terminal.
What it does not do, and this module adds:

- A process that exits before its app starts leaves the page on the splash screen forever (the
  websocket stays open; the error goes to the server's log). Here the app process shows its own
  start-up errors (``workbench.tui.served``); and when it dies without a word, the last lines it
  wrote to stderr are shown in the page. An app that ends without saying so closes the page's
  session ("Session ended", with a Restart button).
- Closing the tab sends the app a "quit" and waits for it without limit. Here a process whose app
  has not started yet is stopped at once (a page reloaded while starting frees the workspace for
  the next one), and one that has not ended ``QUIT_GRACE_S`` after "quit" is killed.
- Stopping the server (SIGTERM, SIGINT) waits for every app, up to aiohttp's 60 s. Here every
  app is asked to quit and killed after ``SHUTDOWN_GRACE_S``, so the server stops within 2 s.

- Its page template loads Google Fonts' stylesheet from fonts.googleapis.com. A local-first tool
  makes no outside request: here the page is served without any outside address (``LocalPage``)
  and loads Roboto Mono from the font files textual-serve ships, over loopback; with no network
  at all it renders the same.

Each app process runs in its own session (process group), so killing it kills all of it. This
module only serves; what runs in the page is ``workbench.tui.served``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from ..inert import inert

log = logging.getLogger("textual-serve")

QUIT_GRACE_S = 3.0        # a closed tab's app has this long to end after "quit", then it is killed
SHUTDOWN_GRACE_S = 0.8    # when the server stops, every app has this long after "quit", then SIGKILL
KILL_WAIT_S = 0.5         # a closed tab's app: after SIGTERM, before SIGKILL
STDERR_SHOWN = 2000       # characters of a dead app's stderr shown in the page
APP_MODULE = "workbench.tui.served"   # each tab's app process: python -m APP_MODULE --workspace W [--as P]


# a tag that fetches from another host: a stylesheet or script with an absolute http(s) address
OUTSIDE = re.compile(r"""<link\b[^>]*\bhref\s*=\s*["']\s*(?:https?:)?//[^>]*>"""
                     r"""|<script\b[^>]*\bsrc\s*=\s*["']\s*(?:https?:)?//[^>]*>\s*</script>""", re.IGNORECASE)
# Roboto Mono (what the page and xterm.js name) from the files textual-serve ships in its static folder
LOCAL_FONTS = """<style>
      @font-face { font-family: "Roboto Mono"; font-style: normal; font-weight: 100 700;
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic; font-weight: 100 700;
        src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
    </style>"""


class LocalPage(jinja2.FileSystemLoader):
    """textual-serve's templates with every tag that fetches from another host taken out, and its
    fonts declared from the static folder instead: the page makes no request beyond loopback."""

    def get_source(self, environment: jinja2.Environment, template: str):
        source, filename, uptodate = super().get_source(environment, template)
        fonts = [LOCAL_FONTS]   # in place of the first outside tag (Google Fonts' stylesheet)
        return OUTSIDE.sub(lambda _: fonts.pop() if fonts else "", source), filename, uptodate


class _Tee:
    """Passes a stream reader through, keeping the tail of what was read."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader
        self.tail = bytearray()

    async def read(self, n: int = -1) -> bytes:
        data = await self.reader.read(n)
        self.tail += data
        del self.tail[:-STDERR_SHOWN]
        return data


class AppProcess(AppService):
    """One browser tab's app process, started without a shell and stopped within a bound."""

    def __init__(self, argv: list[str], **kwargs):
        super().__init__(" ".join(argv), **kwargs)
        self.argv = argv
        self.started = False      # the app's driver has spoken (its first screen is on its way)
        self.said_exit = False    # the app said it was ending (the page then shows "Session ended")
        self._stderr: _Tee | None = None
        self._stopping: asyncio.Task | None = None

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        from .served import DRIVER

        environment = super()._build_environment(width, height)
        environment["TEXTUAL_DRIVER"] = DRIVER
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24):
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width, height), start_new_session=True)
        self._stdin = process.stdin
        self._stderr = process.stderr = _Tee(process.stderr)
        return process

    async def on_data(self, payload: bytes) -> None:
        self.started = True
        await super().on_data(payload)

    async def on_meta(self, data: bytes) -> None:
        self.started = True
        if b'"exit"' in data:
            self.said_exit = True
        await super().on_meta(data)

    async def run(self) -> None:
        try:
            await super().run()
        except asyncio.CancelledError:
            # textual-serve cancels its stderr reader when the app's output ends; a reader cancelled
            # before it first ran raises here (an app that died at once). Only a real cancel goes on.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
        if self._stopping is not None or self.said_exit:
            return
        try:  # the app died on its own: say so in the page instead of freezing it
            if self.started:
                await self.remote_close()
            else:
                await self._show_last_words()
        except (ConnectionError, RuntimeError):
            pass  # the page is gone already

    async def _show_last_words(self) -> None:
        unread = b""
        try:  # what textual-serve's reader did not get to (it logged the rest)
            unread = await asyncio.wait_for(self._stderr.read(), 1.0)
        except (TimeoutError, ValueError, OSError):
            pass
        log.error("the workbench app ended before it started%s",
                  f": {unread.decode('utf-8', 'replace').strip()}" if unread.strip() else "")
        text = inert(bytes(self._stderr.tail).decode("utf-8", "replace")).strip()  # shown on the page's terminal
        lines = ["The workbench app ended before it started.", "",
                 *(text.splitlines() if text else ["(it wrote nothing)"]), "", "Reload the page to try again."]
        await self.remote_write_bytes(("\x1b[2J\x1b[H" + "\r\n".join(lines) + "\r\n").encode())

    def stop(self, grace: float = QUIT_GRACE_S, *, term: bool = True) -> asyncio.Future:
        """Stop the app: "quit" if it has started (it then closes the workspace itself), at once
        if not; after ``grace`` seconds SIGTERM (with ``term``), then SIGKILL. Safe to call again."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(grace, term))
        return asyncio.shield(self._stopping)

    async def _stop(self, grace: float, term: bool) -> None:
        process = self._process
        if self._task is None or process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if process.returncode is None:
            if self.started:
                await self.send_meta({"type": "quit"})
            else:
                grace = 0.0
            try:
                await asyncio.wait_for(process.wait(), grace or 0.001)
            except TimeoutError:
                await self._kill(process, term)
        await process.wait()
        await self._task
        self._task = None

    def kill(self) -> None:
        """SIGKILL the app's process group now, if it is still running."""
        if self._process is not None and self._process.returncode is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def _kill(self, process, term: bool) -> None:
        for sig, wait in ((signal.SIGTERM, KILL_WAIT_S), (signal.SIGKILL, None))[0 if term else 1:]:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            if wait is None:
                return
            try:
                await asyncio.wait_for(process.wait(), wait)
                return
            except TimeoutError:
                pass


class WorkbenchServer(Server):
    """textual-serve's server running ``workbench.tui.served`` for each tab, on loopback."""

    def __init__(self, workspace: Path, principal: str | None = None, *, host: str = "127.0.0.1",
                 port: int = 8000, module: str = APP_MODULE):
        import textual_serve

        package = Path(textual_serve.__file__).parent
        self.argv = [sys.executable, "-m", module, "--workspace", str(workspace)]
        if principal:
            self.argv += ["--as", principal]
        super().__init__(" ".join(self.argv), host=host, port=port, title="workbench",
                         statics_path=package / "static", templates_path=package / "templates")
        self.apps: set[AppProcess] = set()
        self.sockets: set[web.WebSocketResponse] = set()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=LocalPage(self.templates_path))  # the page asks nothing of other hosts
        return app

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _int(request.query.get("width"), 80)
        height = _int(request.query.get("height"), 24)
        await websocket.prepare(request)
        app = AppProcess(self.argv, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                         close=websocket.close, download_manager=self.download_manager, debug=self.debug)
        self.apps.add(app)
        self.sockets.add(websocket)
        try:
            await app.start(width, height)
            await self._process_messages(websocket, app)
        except ConnectionError:
            pass
        finally:
            await app.stop()
            self.apps.discard(app)
            self.sockets.discard(websocket)
            if not websocket.closed:
                await asyncio.wait([asyncio.ensure_future(websocket.close())], timeout=1.0)
        return websocket

    def initialize_logging(self) -> None:
        super().initialize_logging()
        # textual-serve says this also of an app stopped on purpose before it started (a reload)
        log.addFilter(lambda record: record.getMessage() != "Application failed to start")

    async def on_startup(self, app: web.Application) -> None:
        self.console.print(f"serving the workbench UI on {self.public_url} (ctrl+c stops)", highlight=False)

    async def on_shutdown(self, app: web.Application) -> None:
        """Every app asked to quit and killed after SHUTDOWN_GRACE_S; every page told the session ended."""
        apps = list(self.apps)
        if apps:
            await asyncio.wait([a.stop(SHUTDOWN_GRACE_S, term=False) for a in apps], timeout=SHUTDOWN_GRACE_S + 0.2)
            for a in apps:
                a.kill()  # one already stopping with a closed tab's longer grace
        closing = [asyncio.ensure_future(w.close()) for w in list(self.sockets)]
        if closing:
            await asyncio.wait(closing, timeout=0.3)

    def serve(self, debug: bool = False) -> None:
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=lambda *args: None, shutdown_timeout=0.5, access_log=None)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def serve(workspace: Path, principal: str | None = None, *, port: int = 8000, host: str = "127.0.0.1",
          module: str = APP_MODULE) -> None:
    """Serve the workbench UI for ``workspace`` until SIGINT or SIGTERM. Raises ``UserError`` when
    the port cannot be bound. ``module``: what each tab's process runs (``python -m MODULE
    --workspace W [--as P]``; the launcher names another one to run the app on a team server's facade)."""
    from ..errors import UserError

    try:
        WorkbenchServer(workspace, principal, host=host, port=port, module=module).serve()
    except OSError as e:
        raise UserError(f"cannot serve on {host}:{port}: {e.strerror or e}") from e
