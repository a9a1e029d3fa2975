"""Structured logs: one JSON object per line on the server's own stderr (never a request's
routed output), with a UTC timestamp, a level and an event name."""

from __future__ import annotations

import json
import sys
import threading
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
