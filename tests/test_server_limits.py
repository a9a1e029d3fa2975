"""Bounded requests against a real `workbench server` process (started with a 2 s request timeout
and a cap of 24 connections): a 400 MB chunked body and a 100,000-deep array cost the server
at most 50 MB of peak memory and it keeps serving; every parse error is a 400 with a JSON error;
a stalled request head (slowloris), a silent connection and a stalled body are closed within the
timeout; connections past the cap are refused at once; and every line the server logs on stderr
is JSON, uvicorn's own warnings included. Spoken to over raw sockets: a client library would not
send what an attacker sends."""

from __future__ import annotations

import json
import shutil
import socket
import time
from urllib.parse import urlsplit

import pytest
from server_support import server

pytestmark = pytest.mark.process
TIMEOUT_S, CAP = 2, 24
MB = 1024 * 1024


@pytest.fixture(scope="module")
def limited(sample_workspace_template, tmp_path_factory):
    from workbench import Workbench

    root = tmp_path_factory.mktemp("limits") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as wb:
        token = wb.token_create("marco.bianchi").token
    with server(root, args=("--request-timeout", str(TIMEOUT_S), "--max-connections", str(CAP))) as running:
        HOST["name"] = urlsplit(running.url).netloc
        yield running, token


def connect(running, timeout: float = 30) -> socket.socket:
    where = urlsplit(running.url)
    sock = socket.create_connection((where.hostname, where.port), timeout=timeout)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset ends it too: what came before is kept)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


HOST = {"name": "127.0.0.1"}  # the server's own host:port once it runs (the Host check wants the port)


def head(method: str, path: str, token: str | None, *extra: str, host: str | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host or HOST['name']}", "Content-Type: application/json",
             "Accept: application/json, text/event-stream", *extra]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(running, data: bytes | list[bytes]) -> bytes:
    """Send ``data`` (pieces, stopping when the server closes on us) and read the whole answer."""
    with connect(running) as sock:
        try:
            for piece in [data] if isinstance(data, bytes) else data:
                sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the body was all sent
        return read_all(sock)


def answer(raw: bytes) -> tuple[int, object, dict]:
    """(status, JSON body or text, headers) of one HTTP/1.1 answer."""
    top, _, body = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = body.decode("utf-8", "replace")  # (the MCP SDK answers its own 413 in plain text)
    return int(lines[0].split()[1]), parsed, headers


def memory(pid: int) -> dict[str, int]:
    """VmHWM (the peak resident set) and VmRSS of a process, in bytes."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS"):
                fields[name] = int(value.split()[0]) * 1024
    return fields


def chunked(total: int, size: int = MB):
    piece = b"%x\r\n" % size + b"[" * size + b"\r\n"
    for _ in range(total // size):
        yield piece
    yield b"0\r\n\r\n"


def logged(running) -> list[dict]:
    return [json.loads(line) for line in running.log.read_text().splitlines()]


def test_a_400_mb_chunked_body_and_a_deep_array_cost_little_memory(limited):
    running, token = limited
    pid = running.process.pid
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")  # the peak resident set starts again from now (the model's load is behind us)
    before = memory(pid)
    for path in ("/api/v1/search", "/api/v1/rpc/search", "/api/v1/cli", "/mcp"):
        raw = exchange(running, [head("POST", path, token, "Transfer-Encoding: chunked"),
                                 *chunked(400 * MB)])
        assert not raw or answer(raw)[0] == 413, (path, raw[:200])
    cut = [e for e in logged(running) if e.get("event") == "request" and e.get("status") == 413]
    assert len(cut) == 4, cut  # each cut off at the limit and answered 413 (a reset may lose the answer)
    started = time.monotonic()
    status, body, headers = answer(exchange(running, head("POST", "/api/v1/search", token,
                                                          f"Content-Length: {400 * MB}")))
    assert status == 413 and "over" in body["error"] and headers["connection"] == "close"
    assert time.monotonic() - started < TIMEOUT_S  # answered at once, not after reading (or waiting for) it
    deep = b"[" * 100_000
    for path in ("/api/v1/search", "/api/v1/rpc/search", "/api/v1/cli", "/mcp"):
        status, body, _ = answer(exchange(running, head("POST", path, token, f"Content-Length: {len(deep)}",
                                                         "Connection: close") + deep))
        assert status == 400 and isinstance(body, dict) and "error" in body, (path, status, body)
    after = memory(pid)
    assert after["VmHWM"] - before["VmRSS"] <= 50 * MB, (before, after)
    assert after["VmRSS"] - before["VmRSS"] <= 50 * MB, (before, after)
    status, found, _ = running.call("POST", "/api/v1/search", {"query": "deploy rollback", "k": 2}, token=token)
    assert status == 200 and found["hits"]  # still serving


def test_a_refused_host_with_a_body_pending_closes_at_once(limited):
    """A request the edge refuses (a Host not served here) while a large body is still on its way is
    answered 421 and the connection closed, not kept open for a body nobody will read."""
    running, token = limited
    started = time.monotonic()
    raw = exchange(running, [head("POST", "/api/v1/search", token, "Transfer-Encoding: chunked", host="evil.example"),
                             *chunked(400 * MB)])
    assert answer(raw)[0] == 421 and answer(raw)[2]["connection"] == "close"
    assert time.monotonic() - started < 20  # not the minutes it takes to send (and read) 400 MB here


@pytest.mark.parametrize("raw, words", [(b"{not json", "not JSON"), (b"\xff\xfe{}", "not UTF-8"),
                                        (b"[1, 2]", "JSON object"), (b"[" * 65 + b"]" * 65, "64 deep")])
def test_every_parse_error_is_a_400_with_a_json_error(limited, raw, words):
    running, token = limited
    for path in ("/api/v1/search", "/api/v1/cli", "/api/v1/rpc/search"):
        status, body, headers = running.call("POST", path, raw=raw, token=token)
        assert status == 400 and words in body["error"], (path, status, body)
        assert headers.get("content-type", headers.get("Content-Type")) == "application/json"
    status, body, _ = running.call("POST", "/mcp", raw=raw, token=token,
                                   headers={"Accept": "application/json, text/event-stream"})
    assert status == 400 and isinstance(body, dict) and body["error"], body  # the MCP SDK's JSON-RPC error


def test_a_stalled_head_a_silent_connection_and_a_stalled_body_are_closed(limited):
    running, token = limited
    cases = {"half a head": head("GET", "/api/v1/pins", token)[:-10], "nothing": b"",
             "a stalled body": head("POST", "/api/v1/search", token, "Content-Length: 100") + b'{"query"'}
    for name, sent in cases.items():
        with connect(running) as sock:
            sock.sendall(sent)
            started = time.monotonic()
            raw = read_all(sock)  # returns when the server closes
            took = time.monotonic() - started
        assert TIMEOUT_S - 0.5 <= took <= TIMEOUT_S + 5, (name, took)
        if name == "a stalled body":
            status, body, _ = answer(raw)
            assert status == 408 and "stopped arriving" in body["error"]
        else:
            assert raw == b"", (name, raw)
    with connect(running) as sock:  # slowloris: a byte at a time keeps no head alive past the timeout
        started, request = time.monotonic(), head("GET", "/api/v1/pins", token)
        closed = False
        for byte in request[:-2]:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
        assert closed or read_all(sock) == b""
        assert time.monotonic() - started <= TIMEOUT_S + 5


def test_an_idle_connection_between_requests_is_kept_alive(limited):
    running, token = limited
    with connect(running) as sock:
        for _ in range(2):
            sock.sendall(head("GET", "/api/v1/pins", token))
            got = sock.recv(65536)
            while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < answer_length(got):
                got += sock.recv(65536)
            assert got.startswith(b"HTTP/1.1 200"), got[:100]
            time.sleep(TIMEOUT_S + 1)  # longer than the request timeout: keep-alive decides, not it


def answer_length(raw: bytes) -> int:
    top = raw.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    return int(top.split("content-length:")[1].split()[0]) if "content-length:" in top else 0


def test_idle_connections_at_the_cap_make_way_for_a_good_client(limited):
    """Issue 26's red team: 515 idle connections, no token at all, refused every good client 503.
    At the cap a new connection closes the one idle the longest instead."""
    running, token = limited
    held = [connect(running) for _ in range(CAP + 5)]  # sending nothing, as the attack did
    try:
        time.sleep(0.2)
        for _ in range(3):
            with connect(running, timeout=10) as good:
                good.sendall(head("GET", "/api/v1/pins", token, "Connection: close"))
                assert read_all(good).startswith(b"HTTP/1.1 200"), "a good client was kept out"
        held[0].settimeout(5)
        assert read_all(held[0]) == b"", "the oldest idle connection was not the one closed"
    finally:
        for sock in held:
            sock.close()


def test_connections_past_the_cap_are_refused_when_each_has_a_request_being_answered(limited):
    running, token = limited
    busy = []
    try:
        for _ in range(CAP):  # each a request being answered: its body is awaited
            sock = connect(running)
            sock.sendall(head("POST", "/api/v1/search", token, "Content-Length: 100"))
            busy.append(sock)
        time.sleep(0.3)
        with connect(running, timeout=5) as extra:
            status, body, headers = answer(read_all(extra))  # answered before it sends anything
        assert status == 503 and "connections open" in body["error"] and headers["connection"] == "close"
        assert headers["retry-after"] == "1"
    finally:
        for sock in busy:
            sock.close()
    time.sleep(0.3)
    assert running.call("GET", "/api/v1/pins", token=token)[0] == 200


def test_bodies_held_at_once_are_bounded_and_small_requests_still_pass(limited):
    """The red team's second blocker: forty ~8 MB bodies, each held back by its last byte, took
    the server from 0.8 to 2.4 GB. Past a small free part, bodies draw on one budget; over it, 503."""
    from workbench.server.limits import BODIES_IN_FLIGHT, MAX_BODY

    running, token = limited
    size = MAX_BODY - 1024
    held, answers = [], []
    try:
        for _ in range(BODIES_IN_FLIGHT // size + 2):
            sock = connect(running)
            sock.sendall(head("POST", "/api/v1/search", token, f"Content-Length: {size}"))
            try:
                sock.sendall(b" " * (size - 1))  # all but the last byte
            except (BrokenPipeError, ConnectionResetError):
                pass
            held.append(sock)
        time.sleep(0.5)
        status, _, _ = running.call("POST", "/api/v1/search", {"query": "deploy", "k": 1, "as": "marco.bianchi"},
                                    token=token)
        assert status == 200  # a small body never waits for the budget
        for sock in held:
            sock.settimeout(0.5)
            try:
                answers.append(sock.recv(200))
            except (TimeoutError, socket.timeout):
                answers.append(b"")
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        assert refused and b"retry-after: 1" in refused[0].lower(), answers
    finally:
        for sock in held:
            sock.close()


def test_a_lone_surrogate_is_a_400_not_a_500(limited):
    running, token = limited
    for path, body in (("/api/v1/search", b'{"query": "a\\ud800", "k": 2}'), ("/api/v1/show", b'{"id": "a\\udc00"}'),
                       ("/api/v1/rpc/search", b'{"args": ["a\\ud800"]}')):
        status, answer_body, _ = running.call("POST", path, raw=body, token=token)
        assert status == 400 and "lone surrogate" in answer_body["error"], (path, status, answer_body)


def test_an_unknown_command_is_one_bounded_metrics_label(limited):
    running, token = limited
    owner = running.owner
    for argv0 in ("bogus123", "x" * 5000, "bogus456"):
        running.call("POST", "/api/v1/cli", {"argv": [argv0]}, token=token)
    status, text, _ = running.call("GET", "/metrics", token=owner)
    assert status == 200 and "bogus" not in text and "xxxxxxxx" not in text
    assert 'endpoint="cli ?"' in text


def test_every_log_line_is_json_uvicorns_own_included(limited):
    running, _ = limited
    for garbage in (b"NOT HTTP AT ALL\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n"):
        status, body, headers = answer(exchange(running, garbage))
        assert status == 400 and "not a valid HTTP request" in body["error"], body  # JSON, as every error
        assert headers["content-type"] == "application/json"
    time.sleep(0.3)
    lines = running.log.read_text().splitlines()
    assert lines and all(json.loads(line)["ts"] for line in lines), [x for x in lines if not x.startswith("{")]
    events = [json.loads(line) for line in lines]
    assert any(e.get("logger") == "uvicorn.error" and "Invalid HTTP request" in e["message"] for e in events)


@pytest.mark.parametrize("args, words", [(("--request-timeout", "0"), "--request-timeout"),
                                         (("--request-timeout", "nan"), "--request-timeout"),
                                         (("--max-connections", "0"), "--max-connections")])
def test_bounds_out_of_range_are_refused_before_serving(workspace, args, words):
    from conftest import run_cli

    r = run_cli("server", "--port", "0", *args, workspace=workspace)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (workspace / "server.json").exists()
