"""The OpenAPI 3.1 description of the team server's API: generated from the command descriptions
the server routes and checks requests with (not a copy), valid by a real validator, served without
a token, and held to by the server under schemathesis (a real server on a throwaway copy of the
sample workspace, a person's token: no server error, every answer matching its schema and
content type, bad parameters answered 400 with a JSON error)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import examples
from server_support import server

pytestmark = pytest.mark.process
ST = Path(sys.executable).parent / "st"


def api():
    from workbench.cli.main import cli
    from workbench.cli.remote import CommandApi

    return CommandApi(cli)


def document(command_api=None):
    from workbench.server.openapi import document as build

    return build(command_api or api(), version="test")


def test_the_document_is_valid_openapi_3_1_and_covers_every_command():
    from openapi_spec_validator import validate

    doc = document()
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    for command in api().describe():
        assert set(doc["paths"][command["path"]]) == {"get", "post"}, command["path"]
    for path in ("/healthz", "/metrics", "/api/v1", "/api/v1/cli", "/api/v1/rpc/{method}", "/api/v1/openapi.json",
                 "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        assert path in doc["paths"], path
    assert doc["components"]["securitySchemes"]["bearer"] == {**doc["components"]["securitySchemes"]["bearer"],
                                                              "type": "http", "scheme": "bearer"}
    assert doc["security"] == [{"bearer": []}]
    opened = {path for path, ops in doc["paths"].items() if ops.get("get", {}).get("security") == []}
    assert opened == {"/healthz", "/api/v1/openapi.json", "/.well-known/oauth-protected-resource",
                      "/.well-known/oauth-protected-resource/mcp"}


def test_parameters_are_typed_from_the_commands_own_options():
    doc = document()
    search = doc["paths"]["/api/v1/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "required" not in search and search["additionalProperties"] is False   # the query, or --paths
    show = doc["paths"]["/api/v1/show"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert show["required"] == ["id"]
    props = search["properties"]
    assert props["paths"]["type"] == "array"
    assert props["k"]["type"] == "integer" and props["dense_weight"]["type"] == "number"
    assert props["explain"]["type"] == "boolean" and props["kind"]["type"] == "array"
    propose = doc["paths"]["/api/v1/propose"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert propose["properties"]["kind"]["enum"] == ["note", "session-summary", "anti-pattern", "observation"]
    assert "stdin" in doc["paths"]["/api/v1/edit"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "properties"]
    compare = doc["paths"]["/api/v1/eval"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "properties"]["compare"]
    assert (compare["minItems"], compare["maxItems"]) == (2, 2)
    query = {p["name"]: p for p in doc["paths"]["/api/v1/search"]["get"]["parameters"]}
    assert not query["query"]["required"] and query["kind"]["explode"] is True
    assert {p["name"]: p for p in doc["paths"]["/api/v1/show"]["get"]["parameters"]}["id"]["required"]
    answer = doc["paths"]["/api/v1/search"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(answer["required"]) == {"trace_id", "hits", "avoid"}
    assert doc["paths"]["/api/v1/search"]["get"]["responses"]["400"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/Error"}


def test_the_document_follows_the_commands_not_a_copy():
    """A command with new options is in the document as they are, and the server checks a request
    for it by the same descriptions: what the document forbids, argv_for refuses."""
    from workbench.cli.remote import CommandApi
    from workbench.errors import UserError

    @click.group()
    def root():
        pass

    @root.command("frob", help="Frob things.")
    @click.argument("target")
    @click.option("--times", type=int, required=True)
    @click.option("--mode", type=click.Choice(["fast", "slow"]))
    @click.option("--tag", "tags", multiple=True)
    @click.option("--dry-run", is_flag=True)
    @click.option("--json", "as_json", is_flag=True)
    def frob(target, times, mode, tags, dry_run, as_json):
        pass

    toy = CommandApi(root)
    body = document(toy)["paths"]["/api/v1/frob"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"] == {"target": {"type": "string"}, "times": {"type": "integer"},
                                  "mode": {"type": "string", "enum": ["fast", "slow"]},
                                  "tags": {"type": "array", "items": {"type": "string"}},
                                  "dry_run": {"type": "boolean"}}
    assert sorted(body["required"]) == ["target", "times"]
    assert toy.argv_for("frob", {"target": "-x", "times": 3, "tags": ["a", "b"], "dry_run": True}) == \
        ["frob", "--times=3", "--tag=a", "--tag=b", "--dry-run", "--json", "--", "-x"]
    assert toy.argv_for("frob", {"target": "t", "times": "3", "dry_run": "false"}) == \
        ["frob", "--times=3", "--json", "--", "t"]  # a query string's words
    for bad, word in (({"target": ["a", "b"]}, "one value"), ({"target": {"a": 1}}, "not an object"),
                      ({"times": True}, "not true/false"), ({"dry_run": "maybe"}, "a flag"),
                      ({"tags": [["a"]]}, "not a list"), ({"target": "a\x00b"}, "NUL"), ({"nope": 1}, "unknown")):
        with pytest.raises(UserError, match=word):
            toy.argv_for("frob", {"target": "t", "times": 1, **bad})


# -- against a real server ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def team(sample_workspace_template, tmp_path_factory):
    """A server on a throwaway copy of the sample workspace (the run calls write commands), run in
    an empty folder of its own; a token for marco.bianchi (a person, not an admin: no paths on the
    server's disk); the ids, scopes and principals schemathesis draws from part of the time."""
    from workbench import Workbench

    base = tmp_path_factory.mktemp("openapi")
    root = base / "ws"
    shutil.copytree(sample_workspace_template, root)
    (base / "cwd").mkdir()
    with Workbench.open(root) as wb:
        token = wb.token_create("marco.bianchi").token
        ids = sorted(f.id for f in wb.list(principal="marco.bianchi"))[:40] + ["tw-rb-oncall-paging-escalation"]
        principals = sorted(wb.config.principals)
    with server(root, cwd=base / "cwd") as running:
        yield running, token, {"ids": ids, "principals": principals, "base": base}


def test_the_document_is_served_without_a_token_and_is_the_generated_one(team):
    running, _, _ = team
    status, served, headers = running.call("GET", "/api/v1/openapi.json")
    assert status == 200, served
    assert {k.lower(): v for k, v in headers.items()}["content-type"].startswith("application/json")
    from openapi_spec_validator import validate

    validate(served)
    from workbench import __version__

    assert served == json.loads(json.dumps(document() | {"info": {**document()["info"], "version": __version__}}))


def test_bad_parameters_are_400s_with_a_json_error_never_500s(team):
    """What schemathesis found, kept as plain cases."""
    running, token, _ = team
    for method, path, body in (("GET", "/api/v1/dedupe?distance=-24113", None),        # was a 500 (negative shift)
                               ("GET", "/api/v1/dedupe?distance=100000000", None),     # would band 10^8 times
                               ("POST", "/api/v1/search", {"query": "x", "rerank": "\x00y"}),  # was a 500 (NUL)
                               ("POST", "/api/v1/rpc/graph_node", {"args": [[]]}),      # was a 500 (TypeError)
                               ("POST", "/api/v1/search", {"query": "x", "k": [1, 2]}),
                               ("GET", "/api/v1/search?query=x&explain=perhaps", None)):
        status, answer, headers = running.call(method, path, body, token=token)
        assert status == 400, (path, status, answer)
        assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/json", path
        assert isinstance(answer["error"], str | dict) and answer["error"], answer
    status, answer, _ = running.call("POST", "/api/v1/cli", {"argv": ["search", "a\x00b"]}, token=token)
    assert status == 200 and answer["exit"] == 2 and "NUL" in answer["stderr"]
    status, answer, _ = running.call("GET", "/api/v1/search?query=deploy&explain=true&k=2", token=token)
    assert status == 200 and len(answer["hits"]) == 2 and "scores" in answer["hits"][0], answer


def test_a_machine_tool_is_not_served_and_a_tilde_path_is_no_500(team):
    """Schemathesis found ``GET /api/v1/model/build-int8?out=~9%23&force=true`` a 500 ('Could not
    determine home directory'): build-int8 wrote a model folder wherever a token named, on the
    server's disk. It runs only where it is typed now; and ``~name`` naming no user stays as typed
    (as a shell leaves it) on every path the server takes from a request."""
    running, token, _ = team
    assert "/api/v1/model/build-int8" not in document()["paths"]
    assert "/api/v1/model/add" in document()["paths"]
    for who in (token, running.owner):
        status, answer, _ = running.call("GET", "/api/v1/model/build-int8?out=%7E9%23&force=true", token=who)
        assert status == 404, (status, answer)
        status, answer, _ = running.call("POST", "/api/v1/cli", {"argv": ["model", "build-int8", "~9#"]}, token=who)
        assert status == 200 and answer["exit"] == 2 and "runs on your machine" in answer["stderr"], answer
    status, answer, _ = running.call("POST", "/api/v1/model/add", {"path": "/tmp"}, token=token)  # a person's token
    assert status != 500 and "admin token" in json.dumps(answer), answer
    for argv in (["eval", "--golden", "~9#/golden.yaml"], ["model", "add", "~9#"], ["backup", "--out", "~9#/b"]):
        status, answer, _ = running.call("POST", "/api/v1/cli", {"argv": argv}, token=running.owner)
        assert status == 200 and answer["exit"] in (1, 2) and "home directory" not in answer["stderr"], (argv, answer)
        assert "internal error" not in answer["stderr"], (argv, answer)


def test_a_tilde_naming_no_user_stays_as_typed():
    from workbench.userpath import expand_user

    assert expand_user("~9#/x") == Path("~9#/x")
    assert expand_user("~") == Path.home()


def _schemathesis(running, token, data, *, max_examples: int, seed: int | None, phases: str) -> None:
    base = data["base"]
    words = {"ids": data["ids"], "scopes": ["org=northwind", "org=northwind,repo=payments-api", "org=tidewater"],
             "queries": ["customer charged twice", "deploy rollback", "kafka consumer lag", "idempotency key"],
             "principals": data["principals"]}
    lines = ["[dictionaries]", *(f"{name} = {{ values = {json.dumps(values)} }}" for name, values in words.items()),
             "", "[parameters]"]
    for name, dictionary, probability in (("id", "ids", 0.7), ("keep", "ids", 0.7), ("drop", "ids", 0.7),
                                          ("scope", "scopes", 0.6), ("query", "queries", 0.5),
                                          ("for_principal", "principals", 0.6)):
        for where in ("query", "body"):
            lines.append(f'"{where}.{name}" = {{ dictionary = "{dictionary}", probability = {probability} }}')
    config = base / "schemathesis.toml"
    config.write_text("\n".join(lines) + "\n")
    command = [str(ST), "--config-file", str(config), "run", running.url + "/api/v1/openapi.json",
               "--header", f"Authorization: Bearer {token}",
               "--checks", ("not_a_server_error,response_schema_conformance,content_type_conformance,"
                            "status_code_conformance"),
               "--max-examples", str(max_examples), "--workers", "1", "--mode", "all", "--phases", phases,
               "--generation-database", "none", "--request-timeout", "120", "--no-color"]
    if seed is not None:
        command += ["--seed", str(seed)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=1500, cwd=base, check=False)
    assert ran.returncode == 0, ran.stdout[-12000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout and "generated" in ran.stdout, ran.stdout[-3000:]


def test_schemathesis_finds_no_server_error_and_no_answer_off_its_schema(team):
    """Bounded (a fixed seed, a few examples per operation: about 20 s on a quiet machine);
    test_schemathesis_at_length runs more, with a new seed each time, and follows the document's
    links (search -> show, history, trace; set create -> set show) in a stateful phase."""
    running, token, data = team
    _schemathesis(running, token, data, max_examples=examples(6), seed=20261204, phases="examples,coverage,fuzzing")


@pytest.mark.slow
@pytest.mark.deep
def test_schemathesis_at_length(team):
    running, token, data = team
    _schemathesis(running, token, data, max_examples=examples(100), seed=None,
                  phases="examples,coverage,fuzzing,stateful")
