"""JSON Schemas of what the team server answers: the errors, the protected-resource metadata, the
command listing, and the documented ``--json`` contracts of the commands agents and clients read
most (README, "Commands"): a search, a context, a fragment, its history, a listing, pins,
principals, the workspace info. Each names the keys the contract documents as required and types
them loosely (a new key passes; a missing or mistyped one does not), so schemathesis checks every
answer the server gives against them (tests/test_openapi.py). Commands without one here answer
any JSON value. Data only: used by ``openapi``; nothing here runs a request.
"""

from __future__ import annotations

from typing import Any

STR, INT, NUM, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
OBJ, ARR = {"type": "object"}, {"type": "array"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": {**required, **optional}}


ERROR = obj({"error": STR}, exit={"type": "integer", "description": "the command's exit code (2: a user error)"})
RPC_ERROR = obj({"error": obj({"type": STR, "message": STR}, param=nullable(STR), exit_code=INT)})
PRM = obj({"resource": STR, "bearer_methods_supported": {"type": "array", "items": STR}},
          resource_name=STR, authorization_servers={"type": "array", "items": STR})
PARAM = obj({"name": STR, "kind": STR, "required": BOOL, "many": BOOL, "flag": BOOL, "schema": OBJ},
            help=nullable(STR))
COMMANDS = obj({"commands": {"type": "array", "items": obj({"command": STR, "path": STR, "json": BOOL,
                                                             "params": {"type": "array", "items": PARAM}},
                                                            help=nullable(STR))}})

SCOPE = obj({"org": STR}, repo=nullable(STR), persona=nullable(STR), session=nullable(STR))
STAMP = nullable(STR)
HIT = obj({"id": STR, "version": INT, "title": STR, "kind": STR, "rank": INT, "score": NUM,
           "confidence": nullable(NUM), "scores": OBJ, "scope": SCOPE, "owner": STR, "text": STR},
          source=nullable(OBJ), updated_at=STAMP, superseded_by=nullable(OBJ), reason=STR, archived=BOOL)
ITEM = obj({"id": STR, "version": INT, "title": STR, "kind": STR, "score": NUM, "tokens": INT, "text": STR,
            "scope": SCOPE, "owner": STR},
           confidence=nullable(NUM), scores=OBJ, partial=BOOL, sections=ARR, superseded_by=nullable(OBJ))
SEARCH = obj({"trace_id": nullable(STR), "hits": {"type": "array", "items": HIT},
              "avoid": {"type": "array", "items": HIT}}, paths={"type": "array", "items": STR})
CONTEXT = obj({"trace_id": nullable(STR), "budget_tokens": INT, "used_tokens": INT,
               "fragments": {"type": "array", "items": ITEM}, "avoid": {"type": "array", "items": ITEM},
               "omitted": {"type": "array", "items": obj({"id": STR})}, "abstained": BOOL},
              min_confidence=nullable(NUM), note=nullable(STR))
FRAGMENT = obj({"id": STR, "version": INT, "kind": STR, "title": STR, "body": STR, "scope": SCOPE, "owner": STR,
                "status": STR, "tags": ARR, "links": ARR, "supersedes": ARR, "sources": ARR, "details": OBJ,
                "content_hash": STR, "created_at": STR, "updated_at": STR},
               verified_at=STAMP, superseded_by=nullable(OBJ))
VERSION = obj({"id": STR, "version": INT, "author": STR, "created_at": STR, "content_hash": STR, "status": STR,
               "title": STR}, reason=nullable(STR))
LISTED = obj({"id": STR, "version": INT, "kind": STR, "title": STR, "owner": STR, "scope": SCOPE, "status": STR,
              "tags": ARR}, updated_at=STAMP, verified_at=STAMP)
PIN = obj({"id": STR, "scope": SCOPE, "pinned_by": STR, "pinned_at": STR}, reason=nullable(STR), until=STAMP)
PRINCIPAL = obj({"name": STR, "orgs": ARR, "repos": ARR, "personas": ARR, "lead_of": ARR})
INFO = obj({"workspace": STR, "name": STR, "schema_versions": {"anyOf": [OBJ, ARR]}, "fragments": INT,
            "versions": INT, "events": INT})
TEXT = {"anyOf": [obj({"text": STR}), {"type": "null"}]}


def _many(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


# A command's answer with exit 0 (app.command): its --json output.
ANSWERS: dict[str, dict[str, Any]] = {
    "search": SEARCH, "context": CONTEXT, "show": FRAGMENT, "history": _many(VERSION), "list": _many(LISTED),
    "pins": _many(PIN), "principals": _many(PRINCIPAL), "info": INFO,
    **{name: FRAGMENT for name in ("revert", "archive", "restore", "verify", "antipattern/add", "propose",
                                   "review/accept", "review/reject")},
}


# Where an answer leads (OpenAPI links, for stateful testing and for readers): the reads an id or a
# trace id in it is the argument of, as (command, its parameter, a JSON pointer into the answer).
_FRAGMENT_READS = (("show", "id"), ("history", "id"))
LINKS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "search": (*((c, p, "/hits/0/id") for c, p in _FRAGMENT_READS), ("trace", "id", "/trace_id")),
    "context": (*((c, p, "/fragments/0/id") for c, p in _FRAGMENT_READS), ("trace", "id", "/trace_id")),
    "list": tuple((c, p, "/0/id") for c, p in _FRAGMENT_READS),
    **{name: tuple((c, p, "/id") for c, p in _FRAGMENT_READS)
       for name in ("show", "propose", "antipattern/add", "verify", "revert", "archive", "restore")},
    "set/create": (("set/show", "name", "/name"),),
}


def answer(command: dict[str, Any]) -> dict[str, Any]:
    """The schema of a 200 answer of ``command`` (an entry of ``CommandApi.describe``)."""
    if not command["json"]:
        return TEXT
    return ANSWERS.get(command["command"], {})
