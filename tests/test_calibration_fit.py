"""Calibration that fits the corpus it serves (issue 28, item 1): a fresh ten-fragment workspace in
a domain unlike the sample's answers its answerable golden queries and abstains on the others with
the prior; ``calibrate`` fits, stores, reports and resets on both backends; a golden set too small
to fit is refused with a clear message."""

from __future__ import annotations

import json

import calib_support as cs
import pytest

from workbench import Workbench
from workbench.errors import UserError
from workbench.rank import calibration
from workbench.tui.format import calibration_label


@pytest.fixture(scope="module")
def mill(tmp_path_factory):
    src = tmp_path_factory.mktemp("mill-src")
    frags, config = cs.write_workspace_files(src)
    wb = Workbench.init(tmp_path_factory.mktemp("mill") / "ws", config=config)
    assert not wb.ingest([frags], actor="ines").errors
    yield wb
    wb.close()


def test_a_fresh_ten_fragment_workspace_answers_and_abstains_with_the_prior(mill):
    assert mill.calibration() == calibration.PRIOR and mill.calibration_info()["source"] == "prior"
    for qid, query, fid in cs.ANSWERABLE:
        got = mill.context(query, principal="tom")
        assert not got.abstained and fid in {i.hit.id for i in got.fragments}, qid
    for qid, query in cs.UNANSWERABLE:
        assert mill.context(query, principal="tom").abstained, qid
    # the legacy model (fitted on the sample corpus) starved this workspace: the symptom
    index = mill.search_index()
    from workbench.models import utcnow
    from workbench.retrieval.pipeline import hits_from, rank

    starved = 0
    for _, query, _ in cs.ANSWERABLE:
        ranking = rank(index, query, mill.principal("tom"), mill.settings(), now=utcnow())
        hits, _ = hits_from(index, ranking, mill.settings(k=20), for_context=True,
                            min_confidence=calibration.LEGACY.floor, model=calibration.LEGACY)
        starved += not hits
    assert starved >= 3
    # gaps reports the unanswerable questions, not the answered ones
    report = mill.gaps(days=30)
    asked = {e for g in report.groups for e in g.examples}
    assert not asked & {q for _, q, _ in cs.ANSWERABLE}
    assert {q for _, q in cs.UNANSWERABLE} <= asked


def test_calibrate_refuses_a_golden_set_too_small_to_fit(mill, tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text("queries:\n" + "".join(
        f"  - id: s{i}\n    query: \"{q}\"\n    principal: tom\n    relevant: [{f}]\n"
        for i, (_, q, f) in enumerate(cs.ANSWERABLE[:3])), encoding="utf-8")
    with pytest.raises(UserError, match="too small to fit"):
        mill.calibrate(small)
    assert mill.calibration() == calibration.PRIOR


@pytest.fixture
def mill_on(backend, tmp_path, request):
    src = tmp_path / "src"
    frags, config = cs.write_workspace_files(src)
    if backend == "postgresql":
        import pg_support

        config = pg_support.yaml_with_store(config, request.getfixturevalue("pg_url"), src / "workbench-pg.yaml")
    root = tmp_path / "ws"
    wb = Workbench.init(root, config=config)
    assert not wb.ingest([frags], actor="ines").errors
    yield wb, root
    wb.close()


def test_calibrate_round_trip(mill_on):
    wb, root = mill_on
    dry = wb.calibrate(dry_run=True)
    assert not dry.stored and dry.calibration.source == "golden" and wb.calibration() == calibration.PRIOR
    assert dry.calibration.counts["queries"] == 15 and dry.calibration.counts["unanswerable"] == 5
    with pytest.raises(Exception, match="only an admin"):
        wb.calibrate(principal="tom")
    fitted = wb.calibrate().calibration
    assert wb.calibration() == fitted and wb.calibration_info()["source"] == "golden"
    assert wb.confidence_floor() == fitted.floor and "golden set" in wb.calibration_info()["summary"]
    assert calibration_label(wb.calibration_info()) == f"floor {fitted.floor:.2f} (golden fit, 15 queries, " \
        f"{fitted.fitted_at[:10]})"                      # the TUI's header
    wb.close()
    with Workbench.open(root) as again:        # stored in the workspace, not in the process
        assert again.calibration() == fitted
        assert json.loads(again.store.calibration())["fitted_from"].endswith("golden.yaml")
        for _, query, fid in cs.ANSWERABLE[:3]:
            assert not again.context(query, principal="tom").abstained
        again.calibrate(reset=True)
        assert again.calibration() == calibration.PRIOR
    wb.__dict__.update(Workbench.open(root).__dict__)   # the fixture closes the one it holds
