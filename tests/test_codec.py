"""The remote facade's codec (workbench/remote/codec.py): the core's real result values survive
encode → JSON text → decode unchanged (same types, equal values), and a message cannot make the
decoder rebuild anything but a workbench data type."""

from __future__ import annotations

import json
import math
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from workbench.errors import UserError
from workbench.models import Fragment, Principal, Scope
from workbench.remote.codec import CodecError, decode, encode

NOW = datetime(2026, 11, 30, 12, 0)
MINE = "nw-adr-0007-idempotency-keys"   # marco.bianchi's
PRINCIPALS = ["marco.bianchi", "priya.raman", "dan.kowalski", "agent.nw-coder", "lena.fischer"]
QUERIES = ["customer charged twice", "roll back a bad deploy", "NWPAY-3110", "idempotency key", "pgbouncer pool",
           "card data", "ledger double entry"]


def wire(value):
    """encode → JSON text (strict: no NaN) → decode, as a value crosses between server and client."""
    return decode(json.loads(json.dumps(encode(value), allow_nan=False)))


def same(value) -> None:
    back = wire(value)
    assert type(back) is type(value)
    assert back == value


@pytest.fixture(scope="module")
def wb(sample_workspace_template, tmp_path_factory):
    from workbench import Workbench

    root = tmp_path_factory.mktemp("codec") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as bench:
        bench.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman", reason="card data rules",
                  until="2099-01-01")
        bench.edit(MINE, "A second version.", reason="v2", actor="marco.bianchi")
        yield bench


# -- the core's results ----------------------------------------------------------------------------


def test_every_kind_of_result_the_tui_reads_round_trips(wb, tmp_path):
    me = "marco.bianchi"
    results = {
        "search": wb.search("customer charged twice", principal=me, k=10),
        "lexical preview": wb.search("charged twice", principal=me, pipeline="bm25", calibrate=False, trace=False),
        "context": wb.context("how do I roll back a bad deploy", principal="dan.kowalski", budget=1500),
        "browse": wb.browse(principal=me, now=NOW),
        "get": wb.get(MINE, principal=me),
        "get old version": wb.get(MINE, version=1, principal=me),
        "history": wb.history(MINE, principal=me),
        "diff": wb.diff(MINE, 1, 2, principal=me),
        "stale": wb.stale(principal=me, now=NOW),
        "pins": wb.pins(principal="priya.raman"),
        "superseded_by": wb.superseded_by("nw-adr-0003-client-retry-tokens", principal=me),
        "graph_node": wb.graph_node(MINE, principal=me),
        "preview_files": wb.preview_files(scope="org=northwind,repo=payments-api", principal=me),
        "render_agents": wb.render_agents("agents-md", scope="org=northwind,repo=payments-api", principal=me),
        "principal": wb.principal(me),
        "principals": wb.principals(),
        "config": wb.config,
        "snooze": wb.snooze(MINE, days=30, actor=me),
        "export_files": wb.export_files(tmp_path / "out", scope="org=northwind,repo=payments-api", principal=me),
        "health": wb.health(),
    }
    assert results["search"].hits and results["stale"] and results["pins"] and results["browse"]
    assert results["superseded_by"] is not None and results["graph_node"] is not None
    for name, value in results.items():
        back = wire(value)
        assert type(back) is type(value), name
        assert back == value, name
    hit = wire(results["search"]).hits[0]
    assert isinstance(hit.fragment, Fragment) and isinstance(hit.fragment.scope, Scope)
    assert hit.fragment.content.tags == results["search"].hits[0].fragment.content.tags  # tuples stay tuples
    assert all(isinstance(p, Path) for p in wire(results["export_files"]))
    assert type(wire(results["history"])).__name__ == "History"  # a list subclass keeps its class


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.sampled_from(QUERIES), principal=st.sampled_from(PRINCIPALS), k=st.integers(1, 25),
       pipeline=st.sampled_from(["hybrid", "bm25", "dense"]))
def test_searches_and_contexts_round_trip(wb, query, principal, k, pipeline):
    same(wb.search(query, principal=principal, k=k, pipeline=pipeline, trace=False))
    same(wb.context(query, principal=principal, budget=k * 100, k=k))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(principal=st.sampled_from(PRINCIPALS), days=st.integers(1, 800), data=st.data())
def test_browse_stale_history_and_pins_round_trip(wb, principal, days, data):
    same(wb.browse(principal=principal, now=NOW + timedelta(days=days)))
    same(wb.stale(principal=principal, days=days, now=NOW))
    same(wb.pins(principal=principal, include_expired=True))
    rows = wb.browse(principal=principal)
    if rows:
        fid = data.draw(st.sampled_from([r.id for r in rows]))
        same(wb.history(fid, principal=principal))
        same(wb.get(fid, principal=principal))


# -- plain values ------------------------------------------------------------------------------------

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
           | st.datetimes() | st.dates() | st.timedeltas()
           | st.builds(Path, st.text(st.characters(blacklist_characters="\x00/"), min_size=1)))
keys = st.none() | st.booleans() | st.integers() | st.text() | st.dates() | st.tuples(st.integers(), st.text())
values = st.recursive(scalars, lambda inner: (
    st.lists(inner) | st.tuples(inner, inner) | st.frozensets(keys) | st.sets(st.integers())
    | st.dictionaries(keys, inner) | st.dictionaries(st.text(), inner)
    | st.builds(Scope, st.text(), st.none() | st.text())), max_leaves=20)


@settings(max_examples=examples(300), deadline=None)
@given(values)
def test_plain_values_round_trip(value):
    assert wire(value) == value
    assert type(wire(value)) is type(value)


def test_the_awkward_corners():
    same({"$tuple": 1, "plain": 2})                   # a key that looks like a tag is escaped
    same({("org", 1): [frozenset({1, 2})], None: (1,)})
    assert math.isnan(wire(float("nan"))) and wire(float("-inf")) == -math.inf
    assert wire(np.float32(0.25)) == 0.25 and type(wire(np.int64(3))) is int and wire(np.bool_(True)) is True
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = wire(array)
    assert back.dtype == array.dtype and (back == array).all()
    aware = datetime(2026, 1, 2, 3, 4, 5, 6789).astimezone()
    same(aware)
    same(date(2026, 1, 2))


# -- what is refused ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "os:system",                                  # a function outside the package
    "subprocess:Popen",                           # a class outside the package
    "builtins:dict",
    "workbench.__main__:run",                     # importing it would run the command line
    "workbench.models:utcnow",                    # a function inside the package
    "workbench.errors:UserError",                 # a class inside, but not a data type
    "workbench.models:Principal.__class__",       # a walk out of the class
    "workbench.models:json",                      # a module the package imports
    "workbench.nowhere:Thing",
    "workbench.models:Principal; import os",
])
def test_a_tagged_class_outside_the_workbench_data_types_is_refused(name):
    for body in ({"$class": name, "fields": {}}, {"$class": name, "items": []}):
        with pytest.raises(CodecError, match="refused|not accepted"):
            decode(body)
    assert issubclass(CodecError, UserError)  # the server answers 400, the client shows one line


def test_the_decoder_imports_nothing_outside_the_package(monkeypatch):
    import importlib

    imported = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: imported.append(name) or real(name, *a))
    for name in ("os:system", "json:JSONDecoder", "workbench.__main__:run"):
        with pytest.raises(CodecError):
            decode({"$class": name, "fields": {}})
    assert imported == []


def test_a_narrowed_decode_rebuilds_only_the_classes_given():
    fragment = {"$class": "workbench.models:Principal", "fields": {"name": "root", "orgs": {"$tuple": ["x"]},
                                                                    "admin": True}}
    assert isinstance(decode(fragment), Principal)
    with pytest.raises(CodecError, match="not accepted here"):
        decode(fragment, classes=[Scope])
    assert decode(encode(Scope("northwind", "ledger")), classes=[Scope]) == Scope("northwind", "ledger")


@pytest.mark.parametrize("body, problem", [
    ({"$tuple": [1], "other": 2}, "other keys"),
    ({"$nope": 1}, "unknown tag"),
    ({"$class": "workbench.models:Scope", "fields": {"org": "x", "bogus": 1}}, "no field 'bogus'"),
    ({"$class": "workbench.models:Fragment", "fields": {"id": "x"}}, "needs its field"),
    ({"$datetime": "yesterday"}, "bad \\$datetime"),
    ({"$map": [[[1, 2], 3]]}, "cannot be a list"),
])
def test_malformed_messages_are_codec_errors(body, problem):
    with pytest.raises(CodecError, match=problem):
        decode(body)


def test_values_that_cannot_cross_are_refused_when_sent():
    from dataclasses import make_dataclass

    with pytest.raises(CodecError, match="cannot send"):
        encode(lambda: None)
    with pytest.raises(CodecError, match="not a workbench type"):
        encode(make_dataclass("Foreign", ["x"])(1))
