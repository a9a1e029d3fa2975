"""The routes that tell a client how to talk to the team server, answered without a token: the
protected-resource metadata (RFC 9728, built by ``edge``), the OpenAPI description of the API
(``openapi``), and a plain 404 where OAuth clients look for an authorization server (metadata,
dynamic registration, authorize, token): this server issues its own bearer tokens, and the 404
says so, so such a client stops with that message instead of waiting on a flow that cannot start.

They describe the software, never the workspace. Nothing here authenticates or decides anything.
"""

from __future__ import annotations

from typing import Any

from . import edge

OPENAPI_PATH = "/api/v1/openapi.json"
NO_OAUTH = ("/register", "/authorize", "/token")  # an authorization server's endpoints, at the root


def is_open(path: str) -> bool:
    """Whether ``path`` is one of these routes (answered without a token)."""
    return path == OPENAPI_PATH or path in NO_OAUTH or path.startswith("/.well-known/")


def routes(api) -> list[Any]:
    """The Starlette routes; ``api`` is the CLI's ``CommandApi`` (for the OpenAPI document)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def resource_metadata(request: Request):
        resource = request.path_params.get("resource", "")
        found = edge.metadata(edge.base_url(request.scope), "/" + resource if resource else "")
        if found is None:
            return JSONResponse({"error": "no such resource on this server"}, status_code=404)
        return JSONResponse(found, headers={"Cache-Control": "public, max-age=3600"})

    async def no_oauth(request: Request):
        return JSONResponse({"error": f"{request.url.path} is not served: this server has no OAuth authorization "
                                      "server; send `Authorization: Bearer TOKEN` with a token from `workbench "
                                      "token create` (see /.well-known/oauth-protected-resource)"}, status_code=404)

    async def openapi_json(request: Request):
        from .. import __version__
        from . import openapi

        return JSONResponse(openapi.document(api, version=__version__))

    return [Route(edge.PRM_PATH, resource_metadata),
            Route(edge.PRM_PATH + "/{resource:path}", resource_metadata),
            Route("/.well-known/{rest:path}", no_oauth),
            *(Route(path, no_oauth, methods=["GET", "POST"]) for path in NO_OAUTH),
            Route(OPENAPI_PATH, openapi_json)]
