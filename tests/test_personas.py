"""Personas (issue 31): per-persona ranking weights, the persona as a ranking feature, ``--persona``
on search and context (CLI, MCP), ``eval --by persona`` and ``tune``. The ranking maths and the tuner's
maths are pure (unit tests); what touches the store runs on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import CONFIG, run_cli, write_fragment
from workbench.config import WorkspaceConfig
from workbench.errors import UserError, ValidationError
from workbench.rank import persona as rank_persona
from workbench.rank import tuning

BASE = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))


def _config(ranking) -> WorkspaceConfig:
    return WorkspaceConfig.from_data({**BASE, "ranking": ranking}, file="ws/workbench.yaml")


# -- configuration -------------------------------------------------------------------------------

def test_ranking_weights_load_per_persona_over_the_default():
    config = _config({"default": {"freshness": 0.2}, "personas": {"sre": {"persona": 0.3, "dense": 0.6}}})
    sre = config.ranking.weights("sre")
    assert (sre.freshness, sre.persona, sre.dense, sre.authority) == (0.2, 0.3, 0.6, 0.1)
    assert config.ranking.weights(None).persona == 0.0 and config.ranking.weights("backend").freshness == 0.2


@pytest.mark.parametrize("ranking, field", [
    ({"personas": {"sre": {"freshnes": 0.3}}}, "ranking.personas.sre.freshnes"),
    ({"personas": {"sre": {"authority": -0.1}}}, "ranking.personas.sre.authority"),
    ({"personas": {"sre": {"dense": 1.5}}}, "ranking.personas.sre.dense"),
    ({"personas": {"sre": {"persona": "lots"}}}, "ranking.personas.sre.persona"),
    ({"personas": {"frontend": {"persona": 0.1}}}, "ranking.personas.frontend"),
    ({"weights": {}}, "ranking.weights"),
])
def test_bad_ranking_weights_are_refused_naming_the_file_and_the_key(ranking, field):
    with pytest.raises(ValidationError) as e:
        _config(ranking)
    assert e.value.field == field and "ws/workbench.yaml" in str(e.value)


# -- the persona as a ranking feature (pure) ----------------------------------------------------

def test_the_persona_weight_prefers_the_personas_fragments_without_filtering():
    final = np.array([0.9, 0.8, -np.inf, 0.5])
    in_persona = np.array([False, True, True, False])
    w = rank_persona.Weights(persona=0.2)
    out = rank_persona.adjust(final, in_persona, None, w)
    assert list(np.argsort(-out)[:2]) == [1, 0]          # the persona's fragment moves up
    assert out[2] == -np.inf and out[3] == 0.5           # a non-candidate stays out; others stay in
    assert rank_persona.adjust(final, in_persona, None, rank_persona.DEFAULT) is final   # defaults: untouched


# -- tuning (pure) ---------------------------------------------------------------------------------

def _synthetic(n: int, persona_signal: bool, seed: int = 0) -> list[tuning.Candidates]:
    """Queries over 30 candidates; with ``persona_signal`` the relevant one is scoped to the persona
    and ranks second-to-fifth, else the persona mask is unrelated to relevance."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lexical, dense = rng.uniform(1, 5, 30), rng.uniform(0.2, 0.8, 30)
        target = int(rng.integers(30))
        in_persona = rng.random(30) < 0.2
        if persona_signal:
            order = np.argsort(-(0.7 * dense + 0.3 * lexical / lexical.max()))
            target = int(order[rng.integers(1, 5)])
            in_persona[:] = False
            in_persona[target] = True
        out.append(tuning.Candidates(lexical, dense, np.ones(30), np.zeros(30), in_persona,
                                     np.zeros(0, dtype=np.int64), frozenset({target})))
    return out


def test_tune_finds_a_held_out_gain_when_the_persona_carries_signal():
    cv = tuning.cross_validate(_synthetic(30, True), rank_persona.DEFAULT, 5)
    assert cv.gain > 0.2 and not cv.within_noise and cv.losses == 0


def test_tune_calls_a_gain_without_signal_within_noise():
    cv = tuning.cross_validate(_synthetic(30, False, seed=3), rank_persona.DEFAULT, 5)
    assert cv.within_noise
    assert tuning.within_noise(0.01, 0.006) and tuning.within_noise(-0.1, 0.0) and not tuning.within_noise(0.05, 0.01)


def test_write_ranking_changes_only_the_ranking_section(tmp_path):
    from workbench.service.tuning import write_ranking

    path = tmp_path / "workbench.yaml"
    text = CONFIG.read_text(encoding="utf-8")
    path.write_text(text.replace("principals:\n", "ranking:\n  personas:\n    sre: {persona: 0.1}\n\n"
                                 "# the people\nprincipals:\n", 1), encoding="utf-8")
    ranking = rank_persona.Ranking(personas={"sre": rank_persona.Weights(persona=0.3, freshness=0.2)})
    config = write_ranking(path, ranking)
    assert config.ranking.weights("sre").persona == 0.3
    written = path.read_text(encoding="utf-8")
    assert written.replace("    sre:\n      freshness: 0.2\n      persona: 0.3\n", "    sre: {persona: 0.1}\n") == \
        text.replace("principals:\n", "ranking:\n  personas:\n    sre: {persona: 0.1}\n\n# the people\nprincipals:\n", 1)
    path.write_text(text, encoding="utf-8")                  # no ranking: section yet: appended, the rest kept
    write_ranking(path, ranking)
    assert path.read_text(encoding="utf-8").startswith(text) and "ranking:" in path.read_text(encoding="utf-8")


# -- on a workspace, both backends ---------------------------------------------------------------------

@pytest.fixture
def persona_ws(backend_config, tmp_path):
    """Two runbooks on one question: the generic one ranks first, the SRE-scoped one second."""
    from workbench import Workbench

    root, folder = tmp_path / "ws", tmp_path / "frags"
    body = "When the connection pool is exhausted, clients wait for a database connection."
    write_fragment(folder, "generic-pool", kind="runbook", title="Connection pool exhausted", body=body + " " + body,
                   org="northwind", repo=None, owner="priya.raman")
    write_fragment(folder, "sre-pool", kind="runbook", title="Pool exhausted: the SRE steps",
                   body=body + " Page the on-call SRE.", org="northwind", repo=None, persona="sre", owner="priya.raman")
    write_fragment(folder, "security-secret", kind="runbook", title="Connection pool secret rotation",
                   body=body + " Security rotates the pool password.", org="northwind", repo=None, persona="security", owner="priya.raman")
    config = tmp_path / "workbench.yaml"
    config.write_text(Path(backend_config).read_text(encoding="utf-8")
                      + "ranking:\n  personas:\n    sre: {persona: 1.0}\n", encoding="utf-8")
    Workbench.init(root, config=config).close()
    with Workbench.open(root) as wb:
        assert not wb.ingest([folder], actor="kb.sync").errors
    return root


def test_a_persona_changes_the_order_and_is_traced(persona_ws):
    from workbench import Workbench

    with Workbench.open(persona_ws) as wb:
        plain = wb.search("connection pool exhausted", principal="priya.raman")
        as_sre = wb.search("connection pool exhausted", principal="priya.raman", persona="sre")
        again = wb.search("connection pool exhausted", principal="priya.raman", persona="sre")
        trace = wb.trace(as_sre.trace_id, principal="priya.raman")
    assert [h.id for h in plain.hits][0] == "generic-pool"
    assert [h.id for h in as_sre.hits][0] == "sre-pool" and as_sre.hits[0].scores["persona"] is True
    assert {h.id for h in as_sre.hits} == {h.id for h in plain.hits}       # a preference, not a filter
    assert trace["settings"]["persona"] == "sre" and trace["settings"]["weights"]["persona"] == 1.0
    assert [i["id"] for i in trace["served"]] == [h.id for h in again.hits]   # the same ranking again


def test_a_persona_never_widens_what_the_caller_sees(persona_ws):
    from workbench import Workbench

    with Workbench.open(persona_ws) as wb:
        for persona in ("security", "nope"):      # not dan's persona, and no persona at all: refused alike
            with pytest.raises(UserError) as e:
                wb.search("connection pool exhausted", principal="dan.kowalski", persona=persona)
            assert "cannot act in persona" in e.value.message
        hits = wb.context("pool secret rotation", principal="dan.kowalski", persona="sre").fragments
        assert "security-secret" not in {i.hit.id for i in hits}
        assert "security-secret" not in {h.id for h in wb.search("pool secret rotation", principal="dan.kowalski",
                                                                 persona="sre", k=50).hits}


def test_cli_persona_option_and_refusal(persona_ws):
    done = run_cli("search", "connection pool exhausted", "--as", "priya.raman", "--persona", "sre", "--json",
                   workspace=persona_ws)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["hits"][0]["id"] == "sre-pool" and data["hits"][0]["scores"]["persona"] is True
    refused = run_cli("context", "connection pool", "--as", "dan.kowalski", "--persona", "security",
                      workspace=persona_ws)
    assert refused.returncode == 2 and "cannot act in persona 'security'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_agent_acts_in_its_own_persona(persona_ws):
    from workbench import Workbench
    from workbench import policy

    with Workbench.open(persona_ws) as wb:
        declared = wb.retrieval.declared_personas()
        assert policy.personas.acting_persona(wb.ws.principal("agent.tw-ops"), None, declared) == "sre"
        assert policy.personas.acting_persona(wb.ws.principal("priya.raman"), None, declared) is None
        assert policy.personas.acting_persona(wb.ws.principal("priya.raman"), "security", declared) == "security"


async def test_mcp_persona_argument(persona_ws):
    from mcp import Client

    from test_mcp import params

    async with Client(params(persona_ws, "priya.raman"), read_timeout_seconds=120) as client:
        found = await client.call_tool("search", {"query": "connection pool exhausted", "persona": "sre"})
        assert not found.is_error and found.structured_content["hits"][0]["id"] == "sre-pool"
    async with Client(params(persona_ws, "dan.kowalski"), read_timeout_seconds=120) as client:
        refused = await client.call_tool("context", {"query": "connection pool", "persona": "security"})
        assert refused.is_error and "cannot act in persona" in " ".join(c.text for c in refused.content)


GOLDEN = [{"id": f"p{i}", "query": q, "principal": "priya.raman", "persona": "sre", "relevant": ["sre-pool"]}
          for i, q in enumerate(["connection pool exhausted", "clients wait for a database connection",
                                 "the pool is exhausted", "database connection pool exhausted, clients waiting",
                                 "exhausted connection pool", "clients waiting on the pool"])] + \
         [{"id": "n1", "query": "connection pool exhausted", "principal": "priya.raman", "relevant": ["generic-pool"]}]


def test_tune_refuses_within_noise_and_writes_only_the_ranking_section_beyond_it(persona_ws):
    from workbench.service.tuning import write_ranking

    (persona_ws / "golden.yaml").write_text(yaml.safe_dump({"queries": GOLDEN}), encoding="utf-8")
    config = persona_ws / "workbench.yaml"
    before = config.read_text(encoding="utf-8")
    # persona 1.0 already puts sre-pool first: nothing to gain, so --write refuses and writes nothing
    refused = run_cli("tune", "--persona", "sre", "--folds", "3", "--write", "--golden",
                      str(persona_ws / "golden.yaml"), workspace=persona_ws)
    assert refused.returncode == 1 and "within noise" in refused.stdout + refused.stderr
    assert config.read_text(encoding="utf-8") == before
    # without the persona weight sre-pool ranks second every time: the held-out gain is beyond noise
    write_ranking(config, WorkspaceConfig.load(config).ranking.__class__())
    stripped = config.read_text(encoding="utf-8")
    done = run_cli("tune", "--persona", "sre", "--folds", "3", "--write", "--json", workspace=persona_ws)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written"] and report["heldout_gain"] > 0 and report["queries"] == 6
    after = config.read_text(encoding="utf-8")
    assert after.startswith(stripped) and WorkspaceConfig.load(config).ranking.weights("sre").persona > 0
    assert WorkspaceConfig.load(config).ranking.weights(None) == rank_persona.DEFAULT
    # the golden queries asked in sre now rank sre-pool first; eval --by persona reports them apart
    shown = run_cli("eval", "--golden", str(persona_ws / "golden.yaml"), "--pipeline", "hybrid", "--by", "persona",
                    workspace=persona_ws)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.split("by persona")[1].splitlines()[3:] if line}
    assert rows["sre"][1] == "1.000" and rows["sre"][-1] == "6" and rows["-"][-1] == "1"


def test_eval_by_persona_on_the_sample_golden_set_beside_its_paths_and_archived_entries(sample_workspace):
    """The sample's golden set also holds paths: and archived: entries (their own report sections):
    --by persona reports the pipelines' persona rows beside them (it once failed on the archived one)."""
    golden = Path(__file__).resolve().parents[1] / "sample_corpus" / "golden.yaml"
    shown = run_cli("eval", "--golden", str(golden), "--pipeline", "hybrid", "--by", "persona",
                    workspace=sample_workspace)
    assert shown.returncode == 0, shown.stderr
    assert "archived (5 golden entries" in shown.stdout
    rows = {line.split()[0]: line.split() for line in shown.stdout.split("by persona")[1].splitlines()[3:] if line}
    assert {"security", "sre", "-"} <= set(rows) and rows["security"][-1] == "16", rows
