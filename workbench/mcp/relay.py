"""MCP over stdio, relayed to the team server: what ``workbench mcp --as P`` runs when a server holds
the workspace.

Why: a stdio MCP server of its own loads the model and the index (about 500 MB and seconds per
agent); the team server holds them warm once. This is a plain JSON-RPC pipe, not a second
implementation of the tools: each newline-delimited message read on stdin (the MCP stdio transport)
is POSTed to the server's ``/mcp`` (streamable HTTP), and every message of the answer (a JSON body,
or each event of an SSE stream) is written to stdout, one per line; a notification's 202 writes
nothing. The session the server opens at ``initialize`` (``Mcp-Session-Id``) and the negotiated
``MCP-Protocol-Version`` go on every later request, and the session is deleted when stdin closes.
No GET stream is opened: the server sends nothing unasked (a request's progress and its answer come
on that request's own stream).

What it must not do: import the MCP SDK, the model or the database (the standard library only, so
an agent's relay costs a few MB), or decide anything. The server authenticates the bearer token
and acts as its principal, or, for the owner's or an admin's token, as the principal named by
``X-Workbench-As``.

Failures: a request the server cannot answer (unreachable, a refused token, a broken stream) is
answered with a JSON-RPC error and the relay reads on. A session the server no longer knows (404:
it restarted) is opened again with the client's own ``initialize``; when the server is gone or
refuses the token, ``reconnect`` may name where it is now (a restarted server's new advert).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import urllib.error
import urllib.request
from typing import Any, BinaryIO, Callable, Iterable, Iterator

AS_HEADER, SESSION_HEADER, VERSION_HEADER = "X-Workbench-As", "Mcp-Session-Id", "MCP-Protocol-Version"
WORKERS = 8          # requests in flight at once (a slow `context` does not hold up a `search`)
CLOSE_TIMEOUT_S = 5  # for the DELETE of the session on the way out
PARSE_ERROR, INTERNAL_ERROR = -32700, -32603

Reconnect = Callable[[], "tuple[str, str | None] | None"]


class Failed(Exception):
    """A message the server did not answer; ``status`` is the HTTP status, when there was one."""

    def __init__(self, message: str, *, code: int = INTERNAL_ERROR, status: int | None = None):
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


class Relay:
    """One MCP session on the team server at ``url``, fed from a stdio client."""

    def __init__(self, url: str, token: str | None, principal: str | None, *, out: BinaryIO | None = None,
                 err=None, timeout: float = 600, reconnect: Reconnect | None = None):
        self.url, self.token, self.principal = url.rstrip("/"), token, principal
        self.out = out if out is not None else sys.stdout.buffer
        self.err = err if err is not None else sys.stderr
        self.timeout, self.reconnect = timeout, reconnect
        self.session: str | None = None
        self.version: str | None = None
        self.hello: dict | None = None  # the client's initialize, to open a session again
        self._write_lock, self._session_lock = threading.Lock(), threading.Lock()

    # -- stdin to the server ------------------------------------------------------------------------

    def serve(self, lines: Iterable[bytes]) -> None:
        """Relay every line until the input ends; wait for the answers in flight; end the session."""
        slots, running = threading.BoundedSemaphore(WORKERS), []
        finished = False
        try:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    self.write({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR,
                                                                        "message": "Parse error: not JSON"}})
                    continue
                if _request_id(message) is not None and message.get("method") != "initialize":
                    slots.acquire()
                    running[:] = [t for t in running if t.is_alive()]
                    running.append(threading.Thread(target=self._handle_in_slot, args=(message, slots),
                                                    name="mcp-relay", daemon=True))
                    running[-1].start()
                else:  # initialize, notifications and the client's answers: in order, before what follows
                    self.handle(message)
            finished = True
        finally:
            for thread in running if finished else ():  # interrupted: the answers in flight are dropped
                thread.join()
            self.close()

    def _handle_in_slot(self, message: Any, slots: threading.BoundedSemaphore) -> None:
        try:
            self.handle(message)
        finally:
            slots.release()

    def handle(self, message: Any) -> None:
        """Send one message; write its answers; answer a failed request with a JSON-RPC error."""
        rid = _request_id(message)
        try:
            answered = self.send(message)
            if rid is not None and not answered:
                raise Failed("the workbench server closed the stream without answering")
        except Failed as e:
            if rid is None:
                self.note(f"a notification was not delivered: {e.message}")
            else:
                self.write({"jsonrpc": "2.0", "id": rid, "error": {"code": e.code, "message": e.message}})
        except Exception as e:  # a bug here must not end the session: say so, in one line
            if rid is not None:
                self.write({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": INTERNAL_ERROR, "message": f"workbench MCP relay: {type(e).__name__}: {e}"}})

    def send(self, message: Any) -> bool:
        """POST ``message`` (opening the session again once when the server has lost it, or
        following the server to where ``reconnect`` says it is now); True when the request was answered."""
        if isinstance(message, dict) and message.get("method") == "initialize":
            self.hello = message
            return self._initialize(message, self.write)
        stale = (self.url, self.token, self.session)
        try:
            return self._post(message, self.write)
        except Failed as e:
            if not self._recover(e, stale):
                raise
        return self._post(message, self.write)

    def _initialize(self, message: dict, deliver: Callable[[dict], None]) -> bool:
        """Open a session (sent without the old one's headers; the other requests keep using the
        old one until the server has given the new one)."""
        def answered(answer: dict) -> None:
            if answer.get("id") == message.get("id") and isinstance(answer.get("result"), dict):
                self.version = answer["result"].get("protocolVersion") or self.version
            deliver(answer)

        return self._post(message, answered, fresh=True)

    def _recover(self, failure: Failed, stale: tuple) -> bool:
        """After ``failure``: open a new session (on the same server, or where ``reconnect`` says it
        now is); False when there is nothing to try."""
        if self.hello is None:
            return False
        with self._session_lock:
            if (self.url, self.token, self.session) != stale:
                return True  # another request already recovered
            if failure.status == 404 and self.session:
                pass  # the server does not know this session (it restarted): open another
            elif failure.status in (None, 401) and self.reconnect is not None:
                found = self.reconnect()
                if not found or (found[0].rstrip("/"), found[1]) == (self.url, self.token):
                    return False
                self.url, self.token = found[0].rstrip("/"), found[1]
            else:
                return False
            self.note(f"opening a new MCP session at {self.url}")
            if not self._initialize({**self.hello, "id": "workbench-relay-reopen"}, lambda answer: None):
                return False
            self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, lambda answer: None)
            return True

    # -- the server's answers to stdout -------------------------------------------------------------------

    def _post(self, message: Any, deliver: Callable[[dict], None], *, fresh: bool = False) -> bool:
        """POST one message to /mcp and deliver each message of the answer as it arrives; True when
        the answer held the response to ``message`` (a request). ``fresh``: an initialize, sent
        outside any session; the session it opens is this relay's from then on."""
        rid = _request_id(message)
        seen = []

        def each(answer: Any) -> None:
            if isinstance(answer, dict) and rid is not None and answer.get("id") == rid and (
                    "result" in answer or "error" in answer):
                seen.append(True)
            deliver(answer)

        with self._open("POST", json.dumps(message).encode("utf-8"), fresh=fresh) as resp:
            if fresh:
                self.session = resp.headers.get(SESSION_HEADER)
            kind = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            try:
                if kind == "text/event-stream":
                    for data in _events(resp):
                        each(json.loads(data))
                elif kind == "application/json":
                    body = resp.read()
                    if body.strip():
                        each(json.loads(body))
            except (OSError, ValueError) as e:  # a stream cut short, or not JSON
                if rid is not None and not seen:
                    raise Failed(f"the workbench server's answer was cut short ({e})") from e
        return bool(seen)

    def _open(self, method: str, body: bytes | None = None, *, timeout: float | None = None, fresh: bool = False):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.principal:
            headers[AS_HEADER] = self.principal
        if self.session and not fresh:
            headers[SESSION_HEADER] = self.session
        if self.version and not fresh:
            headers[VERSION_HEADER] = self.version
        request = urllib.request.Request(self.url + "/mcp", data=body, headers=headers, method=method)
        try:
            return urllib.request.urlopen(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            message, code = _http_error(e)
            raise Failed(f"workbench server at {self.url}: {message} (HTTP {e.code})", code=code,
                         status=e.code) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise Failed(f"cannot reach the workbench server at {self.url} ({getattr(e, 'reason', e)})") from None

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._write_lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (OSError, ValueError):  # the client has gone: nothing left to tell it
                pass

    def note(self, text: str) -> None:
        try:
            print(f"workbench mcp: {text}", file=self.err, flush=True)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """End the session on the server (best effort: the server forgets idle sessions anyway)."""
        if self.session is None:
            return
        try:
            self._open("DELETE", timeout=CLOSE_TIMEOUT_S).close()
        except Failed:
            pass
        self.session = None


def _request_id(message: Any) -> Any:
    """The id of a request (a message with a method and an id), else None."""
    if isinstance(message, dict) and "method" in message and message.get("id") is not None:
        return message["id"]
    return None


def _events(stream) -> Iterator[str]:
    """The data of each server-sent event, as it arrives (comments and other fields skipped)."""
    data: list[str] = []
    for raw in stream:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


def _http_error(e: urllib.error.HTTPError) -> tuple[str, int]:
    """(message, JSON-RPC code) of a refusal: the server's JSON-RPC error ({"error": {"code",
    "message"}}), or the team server's own ({"error": "..."}), else the HTTP reason."""
    try:
        body = json.loads(e.read() or b"{}")
    except (OSError, ValueError):
        body = {}
    finally:
        e.close()
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    code = error.get("code") if isinstance(error, dict) else None
    return str(message or e.reason), code if isinstance(code, int) and code != 0 else INTERNAL_ERROR


def run(url: str, token: str | None, principal: str | None, *, timeout: float = 600,
        reconnect: Reconnect | None = None) -> None:
    """Relay this process's stdin and stdout to the server's /mcp until stdin closes (or SIGTERM)."""
    relay = Relay(url, token, principal, timeout=timeout, reconnect=reconnect)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        relay.serve(sys.stdin.buffer)
    except KeyboardInterrupt:
        pass  # serve() has ended the session
