"""Bounded requests: what one request may cost the server before anything else looks at it.

- A body is at most ``MAX_BODY`` bytes, enforced while it is read: a ``Content-Length`` over the
  limit is answered 413 before a byte is read; a chunked body is counted as it arrives and cut
  off at the limit (413), on every route, /mcp included. At most that much is ever held.
- Bodies held at once are bounded too: past its first ``FREE_BYTES`` (a search's or an edit's
  whole body), every byte of a body counts against one budget of ``BODIES_IN_FLIGHT`` for the
  process, held until its request is answered; a body that would pass it is answered 503 with
  Retry-After. Forty 8 MB bodies sent at once no longer take the server to gigabytes, and small
  requests never wait for the budget.
- A body must keep coming: a pause over the request timeout while it is sent is answered 408.
  (A request's line and headers have the same bound, enforced by ``protocol``; an idle
  connection between requests by uvicorn's keep-alive timeout.)
- JSON is nested at most ``MAX_DEPTH`` deep, checked before it is parsed (a body of 100,000
  ``[`` would otherwise exhaust the parser's recursion), and is Unicode text (a ``\ud800``
  escape alone, a lone surrogate, is refused: nothing past here could encode it); every parse
  error is a 400 with a JSON ``{"error"}``.

A refusal sent here, and any answer given before the whole body was read, closes the connection
(``Connection: close``): the rest of a body nobody will read is not waited for. Nothing here knows about tokens or routes: ``app.Front`` wraps
each request's ``receive`` and ``send`` in a ``Body``; routes parse with ``parse_json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_BODY = 8 * 1024 * 1024
FREE_BYTES = 64 * 1024               # of each body, not counted against the budget
BODIES_IN_FLIGHT = 48 * 1024 * 1024  # the budget: bytes of bodies (past their free part) held at once
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
MAX_DEPTH = 64
REQUEST_TIMEOUT_S = 15.0
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')


class Budget:
    """Bytes of request bodies held at once, process-wide (used on the event loop only)."""

    def __init__(self, total: int = BODIES_IN_FLIGHT):
        self.total, self.used = total, 0

    def take(self, n: int) -> bool:
        if n and self.used + n > self.total:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used = max(0, self.used - n)


BUDGET = Budget()


class Body:
    """One request's ``receive`` and ``send``, bounded. ``refused`` is the status this layer
    answered with (413 or 408), after which the application's own answer is dropped and it is
    told the client went away."""

    def __init__(self, scope, receive, send, *, limit: int = MAX_BODY, timeout: float = REQUEST_TIMEOUT_S,
                 budget: Budget | None = None):
        self._receive, self._send, self.limit, self.timeout = receive, send, limit, timeout
        self.seen, self.refused, self.started = 0, None, False
        self.budget, self.held = budget if budget is not None else BUDGET, 0
        headers = dict(scope.get("headers") or [])
        self.declared = _length(headers.get(b"content-length"))
        self.done = not self.declared and b"transfer-encoding" not in headers  # no body comes

    def too_large(self) -> bool:
        """The body announced is over the limit (answer 413 before reading any of it)."""
        return self.declared is not None and self.declared > self.limit

    async def receive(self) -> dict:
        import anyio

        if self.refused:
            return {"type": "http.disconnect"}
        if self.done:  # the whole body was read: what follows is the disconnect, whenever it comes
            return await self._receive()
        with anyio.move_on_after(self.timeout):
            message = await self._receive()
            if message["type"] == "http.request":
                self.seen += len(message.get("body", b""))
                if self.seen > self.limit:
                    await self.refuse(413, f"request body over {self.limit} bytes")
                    return {"type": "http.disconnect"}
                counted = max(0, self.seen - FREE_BYTES) - self.held
                if not self.budget.take(counted):
                    await self.refuse(503, "the server holds as many request bodies as it may right now; "
                                           "retry shortly")
                    return {"type": "http.disconnect"}
                self.held += counted
                self.done = not message.get("more_body", False)
            return message
        await self.refuse(408, f"the request body stopped arriving for {self.timeout:g} s")
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        if self.refused:
            return  # this layer has answered: the application's answer is not sent
        if message["type"] == "http.response.start":
            self.started = True
            if not self.done and not any(k.lower() == b"connection" for k, _ in message.get("headers", [])):
                # answered before the body was all read (the MCP SDK's own 413, a route that reads
                # none): the rest is not waited for, the connection closes after this answer
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        await self._send(message)

    def release(self) -> None:
        """The request is answered: what its body held of the budget is free again."""
        self.budget.give(self.held)
        self.held = 0

    async def refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with a JSON error and close the connection (unless an answer began)."""
        if self.started:
            self.refused = status
            return
        body = json.dumps({"error": message}).encode("utf-8")
        await self._send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"), *([(b"retry-after", b"1")] if status == 503 else [])]})
        await self._send({"type": "http.response.body", "body": body})
        self.refused, self.started = status, True


def _length(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None  # (uvicorn refuses a malformed Content-Length before the application sees it)


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    """(the value, None), or (None, what is wrong with it) for a body that is not UTF-8, not
    JSON, or nested deeper than ``MAX_DEPTH``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "the body is not UTF-8 text"
    if depth(raw) > MAX_DEPTH:
        return None, f"the body is not JSON nested at most {MAX_DEPTH} deep"
    try:
        value = json.loads(text)
        if _SURROGATE_ESCAPE.search(raw):  # only then can a lone surrogate be in it: check exactly
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value, None
    except UnicodeEncodeError:
        return None, "the body is not valid Unicode text (a lone surrogate escape, such as \\ud800 alone)"
    except RecursionError:  # (not reached after the depth check; never a 500 if it were)
        return None, f"the body is not JSON nested at most {MAX_DEPTH} deep"
    except ValueError as e:
        return None, f"the body is not JSON ({e})"


def depth(raw: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings do not
    count), in C and NumPy: a few milliseconds for a body of ``MAX_BODY`` bytes."""
    import numpy as np

    if b"[" not in raw and b"{" not in raw:
        return 0
    codes = np.frombuffer(_STRINGS.sub(b"", raw), dtype=np.uint8)
    steps = (np.isin(codes, (0x5B, 0x7B)).astype(np.int32) - np.isin(codes, (0x5D, 0x7D)))
    return int(np.cumsum(steps).max(initial=0))
