"""The server's HTTP/1.1 connections: uvicorn's h11 protocol with two bounds it lacks.

- A request's line and headers must arrive within the request timeout of their first byte (or
  of the connection opening). uvicorn times out only an idle connection *between* requests
  (keep-alive): a client that sends half a request line and stalls, or trickles a header byte a
  minute (slowloris), or connects and sends nothing, held its connection forever, and each one
  holds a file descriptor. (A stalled *body* is ``limits.Body``'s: 408.)
- Open connections are capped at ``max_connections``, so a flood of connections cannot exhaust
  the descriptors the server needs for its own files. At the cap a new connection is taken by
  closing the connection idle the longest (one with no request being answered: kept alive
  between requests, or still sending its request line and headers); only when every open
  connection has a request being answered is the new one answered 503 and closed. So idle
  connections held open by anyone, with no token at all, cannot keep good clients out: each new
  connection pushes an idle one out (a client whose kept-alive connection was closed reconnects,
  as clients do after an idle close).

And a request h11 cannot parse is answered as every other error of the server: a 400 with a JSON
``{"error"}`` (uvicorn's own is plain text).

Chosen here rather than by uvicorn's ``limit_concurrency``, which answers 503 only once a
request arrives, so idle connections over the limit still pile up. The protocol is h11 always
(uvicorn's "auto" switches to httptools when that is installed, which these hooks do not fit).
Nothing here reads a request's content or knows about routes and tokens.
"""

from __future__ import annotations

import json
import logging
import time

MAX_CONNECTIONS = 512
_WARN_EVERY_S = 10.0


def protocol_class(*, request_timeout: float, max_connections: int):
    """An ``asyncio.Protocol`` class for ``uvicorn.Config(http=...)`` with these bounds."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    body = json.dumps({"error": f"the server has {max_connections} connections open; try again shortly"}).encode()
    busy = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\nconnection: close\r\nretry-after: 1\r\n\r\n" + body)
    refused = {"count": 0, "warned": 0.0}
    evicted = {"count": 0, "warned": 0.0}

    class Protocol(H11Protocol):
        _head_timer = None
        _active_at = 0.0  # when it last received bytes or finished an answer

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._active_at = self.loop.time()
            if len(self.connections) > max_connections:
                idle = self._idlest()
                if idle is None:  # every connection has a request being answered: truly busy
                    transport.write(busy)
                    transport.close()
                    _warn(self.logger, refused, "%d connection(s) refused: %d connections open, each with a "
                          "request being answered (the limit, --max-connections)", max_connections)
                    return
                idle.transport.close()
                _warn(self.logger, evicted, "%d idle connection(s) closed to take new ones: %d connections open "
                      "(the limit, --max-connections)", max_connections)
            self._arm_head()  # connected: a first request line is due

        def _idlest(self):
            """The open connection idle the longest with no request being answered, or None."""
            best = None
            for other in self.connections:
                if other is self or not isinstance(other, Protocol) or other.transport.is_closing():
                    continue
                if other.cycle is not None and not other.cycle.response_complete:
                    continue  # a request is being answered on it
                if best is None or other._active_at < best._active_at:
                    best = other
            return best

        def data_received(self, data: bytes) -> None:
            self._active_at = self.loop.time()
            super().data_received(data)
            self._watch_head()

        def on_response_complete(self) -> None:
            self._active_at = self.loop.time()
            super().on_response_complete()  # (an idle connection's own timeout: keep-alive)
            self._watch_head()

        def connection_lost(self, exc) -> None:
            self._disarm_head()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            """uvicorn's answer to a request h11 cannot parse, as every other error here: JSON."""
            data = json.dumps({"error": f"not a valid HTTP request ({msg.rstrip('.')})"}).encode()
            self.transport.write(self.conn.send(h11.Response(status_code=400, reason=b"Bad Request", headers=[
                (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                (b"connection", b"close")])))
            self.transport.write(self.conn.send(h11.Data(data=data)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

        def _watch_head(self) -> None:
            """Between requests, with anything received since the last answer (part of the next
            request, or the rest of a body that answer did not read): a complete request head
            is due (the timer runs from the first byte, however slowly the rest trickles in).
            Otherwise (a request in progress, or nothing received) no head is awaited."""
            in_progress = self.cycle is not None and not self.cycle.response_complete
            received = self.conn.their_state is not h11.IDLE or bool(self.conn.trailing_data[0])
            waiting = not in_progress and received
            if not waiting:
                self._disarm_head()
            elif self._head_timer is None:
                self._arm_head()

        def _arm_head(self) -> None:
            self._disarm_head()
            self._head_timer = self.loop.call_later(request_timeout, self._head_timed_out)

        def _disarm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.logger.info("a request's line and headers did not arrive within %g s: connection closed",
                                 request_timeout)
                self.transport.close()

    return Protocol


def _warn(logger: logging.Logger, tally: dict, message: str, limit: int) -> None:
    """One warning per ``_WARN_EVERY_S`` at most, with the count since the last one."""
    tally["count"] += 1
    now = time.monotonic()
    if now - tally["warned"] >= _WARN_EVERY_S:
        logger.warning(message, tally["count"], limit)
        tally["count"], tally["warned"] = 0, now
