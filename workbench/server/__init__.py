"""The team server: one process holds the workspace and one warm index, and serves the CLI, the
TUI, agents over MCP, and any HTTP client at once, each request acting as its bearer token's
principal.

``app`` builds the ASGI application (the JSON API, /mcp, /healthz, /metrics); ``advert`` is the
record in the workspace folder by which clients find a running server; ``auth``, ``metrics`` and
``logs`` are its request plumbing. ``rpc`` serves the core's methods to ``client.RemoteWorkbench``
(the facade the TUI runs on beside a server), in ``codec``'s JSON. The server decides no visibility and no write rule: every
request goes through the core for the token's principal.
"""
