"""MCP over HTTP by the book, against a real `workbench server`: Host and Origin allow-lists before
anything else (DNS rebinding), the protected-resource metadata (RFC 9728) every 401 points to, and
what real MCP clients do with it: the MCP SDK's client, fastmcp's and the MCP Inspector's CLI
connect with a bearer token and, without one, stop at once with a message that says to send one
(instead of starting an OAuth flow against an authorization server that does not exist)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT
from server_support import server

pytestmark = pytest.mark.process
HINT = "workbench token create"
INSPECTOR = Path(os.environ.get("WORKBENCH_MCP_INSPECTOR")
                 or ROOT / ".tools" / "inspector" / "node_modules" / ".bin" / "mcp-inspector")


@pytest.fixture(scope="module")
def team(sample_workspace_template, tmp_path_factory):
    """A server allowing, besides loopback, the Host kb.example.com and the Origin
    https://app.example.com (workbench.yaml), any port of proxy.internal and the Origin
    http://tools.internal:8080 (flags); a token for marco."""
    from workbench import Workbench

    root = tmp_path_factory.mktemp("mcp-http") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with open(root / "workbench.yaml", "a", encoding="utf-8") as f:
        f.write("\nserver:\n  allowed_hosts: [kb.example.com]\n  allowed_origins: [\"https://app.example.com\"]\n")
    with Workbench.open(root) as wb:
        token = wb.token_create("marco.bianchi").token
    with server(root, args=("--allow-host", "proxy.internal:*", "--allow-origin", "http://tools.internal:8080")) \
            as running:
        yield running, token


def port_of(running) -> int:
    return int(running.url.rsplit(":", 1)[1])


# -- Host and Origin -------------------------------------------------------------------------------


def test_the_allow_lists_match_names_ports_and_wildcards():
    from workbench.server.edge import AllowList

    allow = AllowList(hosts=("kb.example.com", "proxy.internal:*", "10.0.0.5:8080"), bound="192.168.1.4")
    ok = ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "192.168.1.4:8765", "KB.example.com",
          "proxy.internal", "proxy.internal:1", "10.0.0.5:8080"]
    refused = ["127.0.0.1:8766", "localhost", "kb.example.com:443", "10.0.0.5:8081", "evil.proxy.internal:1",
               "[::2]:8765", "", "192.168.1.4:1"]
    assert [h for h in ok if not allow.host_allowed(h, 8765)] == []
    assert [h for h in refused if allow.host_allowed(h, 8765)] == []
    assert AllowList(hosts=("*",)).host_allowed("anything:1", 8765)
    assert not AllowList(bound="0.0.0.0").host_allowed("0.0.0.0:8765", 8765)  # a wildcard address is no name
    origins = AllowList(origins=("https://app.example.com", "http://tools.internal:*"))
    assert origins.origin_allowed("https://app.example.com", "127.0.0.1:8765", 8765)
    assert origins.origin_allowed("http://tools.internal:3000", "127.0.0.1:8765", 8765)
    assert origins.origin_allowed("https://kb.example.com", "kb.example.com", 8765)  # same origin
    for origin in ("http://app.example.com", "https://app.example.com:444", "null", "file://", "http://localhost:1"):
        assert not origins.origin_allowed(origin, "127.0.0.1:8765", 8765), origin


def test_the_server_section_of_workbench_yaml_is_validated(tmp_path):
    import yaml

    from conftest import CONFIG
    from workbench.config import WorkspaceConfig
    from workbench.errors import ValidationError

    raw = yaml.safe_load(CONFIG.read_text())
    good = WorkspaceConfig.from_data({**raw, "server": {"allowed_hosts": ["kb.example.com", "proxy:*"],
                                                        "allowed_origins": ["https://app.example.com"]}})
    assert good.allowed_hosts == ("kb.example.com", "proxy:*") and good.allowed_origins == ("https://app.example.com",)
    for bad in ({"allowed_hosts": ["kb example.com"]}, {"allowed_hosts": "kb.example.com"}, {"hosts": []},
                {"allowed_origins": ["https://x/ y"]}):
        with pytest.raises(ValidationError):
            WorkspaceConfig.from_data({**raw, "server": bad})


@pytest.mark.parametrize("host", ["evil.example:{port}", "localhost:1", "127.0.0.1:{other}", "kb.example.com:8443",
                                  "attacker.test", ""])
def test_a_host_not_allowed_is_misdirected_before_any_token_is_checked(team, host):
    running, token = team
    port = port_of(running)
    status, body, _ = running.call("GET", "/api/v1", token=token,
                                   headers={"Host": host.format(port=port, other=port + 1)})
    assert status == 421, body
    assert "allow-host" in body["error"] and "allowed_hosts" in body["error"]
    assert running.call("GET", "/api/v1/search?query=x", headers={"Host": "evil.example"})[0] == 421  # no token: still 421


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}",
                                  "kb.example.com", "proxy.internal", "proxy.internal:9000"])
def test_loopback_at_the_servers_port_and_the_configured_hosts_are_served(team, host):
    running, token = team
    status, body, _ = running.call("GET", "/api/v1/info", token=token, headers={"Host": host.format(port=port_of(running))})
    assert status == 200, body


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:3000", "null", "https://kb.example.com.evil",
                                    "http://tools.internal:8081"])
def test_a_cross_site_origin_is_forbidden(team, origin):
    running, token = team
    status, body, _ = running.call("POST", "/api/v1/search", {"query": "deploy"}, token=token, headers={"Origin": origin})
    assert status == 403, body
    assert "allow-origin" in body["error"]
    status, body, _ = running.call("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"Origin": origin, "Accept": "application/json, text/event-stream"})
    assert status == 403, body


def test_no_origin_the_same_origin_and_the_configured_origins_pass(team):
    running, token = team
    port = port_of(running)
    for headers in ({}, {"Origin": f"http://127.0.0.1:{port}"}, {"Origin": f"http://localhost:{port}"},
                    {"Origin": "https://kb.example.com", "Host": "kb.example.com"},
                    {"Origin": "https://app.example.com"}, {"Origin": "http://tools.internal:8080"}):
        status, body, _ = running.call("GET", "/api/v1/info", token=token, headers=headers)
        assert status == 200, (headers, body)


def test_healthz_answers_any_host(team):
    running, _ = team
    assert running.call("GET", "/healthz", headers={"Host": "10.0.0.7:8765"})[:2] == (200, {"status": "ok"})


def test_refusals_at_the_edge_do_not_count_as_failed_logins(team):
    """A storm of bad Hosts (what a rebinding page sends) brakes nobody: the brake counts tokens."""
    running, token = team
    for _ in range(25):
        assert running.call("GET", "/api/v1", token="wbt_000000000000_guess", headers={"Host": "evil.example"})[0] == 421
    assert running.call("GET", "/api/v1", token=token)[0] == 200


# -- protected-resource metadata -------------------------------------------------------------------


def test_protected_resource_metadata_is_open_and_names_the_bearer_header(team):
    running, _ = team
    for path, resource in (("/.well-known/oauth-protected-resource", running.url),
                           ("/.well-known/oauth-protected-resource/mcp", running.url + "/mcp")):
        status, body, _ = running.call("GET", path)
        assert status == 200, body
        assert body["resource"] == resource
        assert body["bearer_methods_supported"] == ["header"]
        assert "authorization_servers" not in body  # this server issues its own tokens
    status, body, _ = running.call("GET", "/.well-known/oauth-protected-resource", headers={"Host": "kb.example.com"})
    assert body["resource"] == "http://kb.example.com"  # as the client reached it
    assert running.call("GET", "/.well-known/oauth-protected-resource/elsewhere")[0] == 404
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/register"):
        status, body, _ = running.call("POST" if path == "/register" else "GET", path, {} if path == "/register"
                                       else None)
        assert status == 404 and HINT in body["error"], (path, body)


def test_every_401_points_to_the_metadata(team):
    running, _ = team
    for method, path, suffix in (("GET", "/api/v1", ""), ("GET", "/metrics", ""), ("POST", "/api/v1/cli", ""),
                                 ("POST", "/mcp", "/mcp")):
        status, body, headers = running.call(method, path, {} if method == "POST" else None,
                                             headers={"Accept": "application/json, text/event-stream"})
        assert status == 401, (path, body)
        challenge = {k.lower(): v for k, v in headers.items()}["www-authenticate"]
        assert challenge == (f'Bearer realm="workbench", resource_metadata='
                             f'"{running.url}/.well-known/oauth-protected-resource{suffix}"'), challenge
    status, body, _ = running.call("POST", "/mcp", {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                                   token="wbt_000000000000_" + "x" * 43,
                                   headers={"Accept": "application/json, text/event-stream"})
    assert status == 401 and body["jsonrpc"] == "2.0" and body["error"]["code"] == -32001, body
    assert HINT in body["error"]["message"]


# -- real clients -----------------------------------------------------------------------------------


def _messages(error: BaseException) -> str:
    """Every message in an exception and the groups it is wrapped in (anyio task groups)."""
    inner = getattr(error, "exceptions", None) or ()
    return " | ".join([str(error), *(_messages(e) for e in inner)])


async def _sdk_tools(running, headers: dict) -> list[str]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(running.url + "/mcp", http_client=http), read_timeout_seconds=60) as client:
        return [t.name for t in (await client.list_tools()).tools]


async def _refused(coro) -> str:
    """The error a client stops with, which it must do at once (not wait on an OAuth flow)."""
    started = time.monotonic()
    with pytest.raises(BaseException) as caught:
        await asyncio.wait_for(coro, 30)
    assert not isinstance(caught.value, asyncio.TimeoutError | TimeoutError), "the client hung"
    assert time.monotonic() - started < 30
    return _messages(caught.value)


async def test_the_mcp_sdk_client_connects_with_the_header_and_says_why_not_without(team):
    running, token = team
    assert "search" in await _sdk_tools(running, {"Authorization": f"Bearer {token}"})
    assert HINT in await _refused(_sdk_tools(running, {}))
    assert HINT in await _refused(_sdk_tools(running, {"Authorization": "Bearer wbt_000000000000_" + "y" * 43}))


async def test_fastmcps_client_connects_with_a_token_and_stops_clearly_without_one(team):
    from fastmcp import Client

    running, token = team

    async def tools(auth):
        async with Client(running.url + "/mcp", auth=auth, timeout=60) as client:
            return [t.name for t in await client.list_tools()]

    assert "search" in await tools(token)
    assert HINT in await _refused(tools(None))
    # asked to do OAuth: it reads the metadata, finds no authorization server, and stops with our 404
    assert HINT in await _refused(tools("oauth"))


def _inspector(running, tmp_path, *headers: str, tty: bool = False) -> subprocess.CompletedProcess:
    command = [str(INSPECTOR), "--cli", running.url + "/mcp", "--transport", "http", "--method", "tools/list"]
    for header in headers:
        command += ["--header", header]
    if tty:  # on a terminal it would start an OAuth flow; without one it refuses before asking anything
        command = ["script", "-qec", subprocess.list2cmdline(command), "/dev/null"]
    env = {**os.environ, "HOME": str(tmp_path), "MCP_INSPECTOR_SECRET_STORE": "memory",
           "PATH": f"{INSPECTOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its own node (22)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL,
                          check=False)


@pytest.mark.skipif(not INSPECTOR.exists(), reason=f"the MCP Inspector is not installed at {INSPECTOR} (`make "
                    "inspector` installs it from the npm registry with its own Node 22)")
def test_the_mcp_inspector_cli_lists_tools_with_the_header_and_stops_clearly_without(team, tmp_path):
    running, token = team
    found = _inspector(running, tmp_path, f"Authorization: Bearer {token}")
    assert found.returncode == 0, found.stderr[-2000:]
    assert {t["name"] for t in json.loads(found.stdout)["tools"]} >= {"search", "get", "context"}
    started = time.monotonic()
    refused = _inspector(running, tmp_path, tty=shutil.which("script") is not None)
    assert refused.returncode != 0 and time.monotonic() - started < 60
    if shutil.which("script"):
        assert HINT in refused.stdout + refused.stderr, (refused.stdout + refused.stderr)[-2000:]
