"""The core methods a remote facade may call (``POST /api/v1/rpc/METHOD``): the client builds its
methods from these names, and the server's ``rpc`` allows these and no others (and decides who
acts, and what needs an admin: see workbench/server/rpc.py)."""

from __future__ import annotations

READ = frozenset({
    "principal", "principals", "list", "browse", "get", "history", "diff", "stats", "search", "context",
    "superseded_by", "replaced_by", "trace", "graph_node", "pins", "stale", "preview_files", "set_show", "set_fragments",
    "render_agents", "quick_lexical", "health", "gaps", "usage", "fragment_usage",
    "proposals", "edit_impact", "actions", "calibration_info",
    "published", "published_context", "subscriptions", "received_via", "received", "context_fragments",
})
WRITE = frozenset({"edit", "revert", "pin", "unpin", "verify", "snooze", "add_antipattern", "add_fragment",
                   "propose", "accept", "reject",
                   "publish", "unpublish", "subscribe", "unsubscribe", "move_subscription"})
# methods that read or write files on the server's disk, with the parameters naming them
DISK = {"ingest": ("paths",), "ingest_git": ("path",), "import_bundle": ("folder",), "export_files": ("out",),
        "export_bundle": ("out",), "export_context_bundle": ("out",), "export_agents": ("out",), "eval_golden": ("path",)}
# parameters of other methods that name files on the server's disk (admin only when given)
DISK_PARAMS = {"search": ("reranker", "repo", "diff_range"), "context": ("reranker", "repo", "diff_range"),
               "edit_impact": ("golden",)}
CONFIG = "config"   # the workspace's configuration (a property of the facade, fetched once by clients)
METHODS = READ | WRITE | frozenset(DISK) | {CONFIG}
