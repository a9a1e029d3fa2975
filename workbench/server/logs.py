"""Structured logs: one JSON object per line on the server's own stderr (never a request's
routed output), with a UTC timestamp, a level and an event name.

``route_logging`` makes every other log line of the process one of these too: Python's logging
(uvicorn's own warnings and errors, such as an invalid HTTP request; the MCP SDK's; asyncio's),
warnings, and an exception that ends a thread, so a log collector reads one format.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import traceback
from datetime import datetime, timezone
from typing import Any, TextIO


class Log:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False):
        real = stream or sys.stderr
        self.stream = getattr(real, "real", real)  # sys.stderr may be routed per request by then
        self.quiet = quiet
        self._lock = threading.Lock()

    def emit(self, level: str, event: str, **fields: Any) -> None:
        record = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                  "level": level, "event": event, **{k: v for k, v in fields.items() if v is not None}}
        line = json.dumps(record, default=str, ensure_ascii=False)
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must not fail a request

    def info(self, event: str, **fields: Any) -> None:
        if not self.quiet:
            self.emit("info", event, **fields)

    def warn(self, event: str, **fields: Any) -> None:
        self.emit("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.emit("error", event, **fields)


class JsonHandler(logging.Handler):
    """Python logging records as lines of a ``Log``: event "log", with the logger's name and the
    message (and the exception's traceback, as one string, when the record has one)."""

    def __init__(self, log: Log):
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is still logged, as given
            message = str(record.msg)
        level = "error" if record.levelno >= logging.ERROR else "warning" if record.levelno >= logging.WARNING \
            else "info"
        failure = "".join(traceback.format_exception(*record.exc_info)).rstrip() if record.exc_info else None
        self.log.emit(level, "log", logger=record.name, message=message, exception=failure)


def route_logging(log: Log, level: int = logging.WARNING) -> None:
    """Send every Python log record of this process at ``level`` or above, every warning and every
    uncaught exception of a thread to ``log`` (uvicorn must then be given ``log_config=None``,
    so it does not install its own plain-text handlers)."""
    handler = JsonHandler(log)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        named = logging.getLogger(name)
        for old in list(named.handlers):
            named.removeHandler(old)
        named.propagate = True
    logging.captureWarnings(True)

    def thread_failed(args) -> None:
        if args.exc_type is SystemExit:
            return
        log.error("thread_failed", thread=getattr(args.thread, "name", None),
                  error=f"{args.exc_type.__name__}: {args.exc_value}",
                  exception="".join(traceback.format_exception(args.exc_type, args.exc_value,
                                                               args.exc_traceback)).rstrip())

    threading.excepthook = thread_failed
