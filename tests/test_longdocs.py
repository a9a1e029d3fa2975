"""Issue 31, item 4: long fragments are scored by their best passage (MaxP), and BM25 weights a
title above the body (field-weighted BM25)."""

from __future__ import annotations

import numpy as np

from workbench import Workbench
from workbench.rank.maxp import best_passage, maxp
from workbench.retrieval.lexical import Bm25, Vocabulary, field_tokens, split_title
from workbench.retrieval.windows import WINDOW, windows

FILLER = ("The settlement service batches ledger postings every night and reconciles them against the "
          "bank statement before the books close. ")
TAIL = "Penguins in the Antarctic huddle together to survive the winter blizzards."


def long_body(paragraphs: int = 12) -> str:
    return "\n\n".join(FILLER * 2 for _ in range(paragraphs)) + "\n\n" + TAIL


# -- MaxP, pure ------------------------------------------------------------------------------

def test_maxp_lifts_a_fragment_to_its_best_passage_and_never_one_outside_the_mask():
    doc = np.array([0.2, 0.5, -np.inf, 0.1])
    passages = np.array([0.9, 0.3, 0.95, 0.05])
    owner = np.array([0, 0, 2, 3])
    mask = np.array([True, True, False, True])
    out = maxp(doc, passages, owner, mask)
    assert out.tolist() == [0.9, 0.5, -np.inf, 0.1]        # 0 lifted; 2 is outside the mask; 3 keeps its own
    assert np.argmax(out) == 0                             # without MaxP fragment 1 would lead
    assert maxp(doc, np.zeros(0), np.zeros(0, dtype=np.int64)).tolist() == doc.tolist()
    assert best_passage(passages, owner, 0) == 0 and best_passage(passages, owner, 1) is None


def test_a_long_text_is_cut_into_title_prefixed_overlapping_windows_and_a_short_one_is_not():
    text = "Ledger nightly batch\n\n" + long_body()
    cut = windows(text)
    assert len(cut) > 3
    assert all(p.startswith("Ledger nightly batch\n\n") for p in cut)
    assert TAIL in cut[-1] and not any(TAIL in p for p in cut[:-2])   # the tail: in the last window(s) only
    assert windows("A title\n\nA short body.") == []
    from workbench.retrieval.embedder import count_tokens

    assert all(count_tokens(split_title(p)[1]) <= WINDOW + 2 for p in cut)


def test_windows_keep_markdown_sections_apart_and_prefix_their_heading_path():
    body = "## Setup\n\n" + FILLER * 6 + "\n\n## Penguins\n\n" + TAIL + " " + FILLER * 5
    cut = windows("Runbook\n\n" + body)
    assert any(p.startswith("Runbook > Penguins\n\n") and TAIL in p for p in cut)
    assert not any(p.startswith("Runbook > Setup") and TAIL in p for p in cut)


# -- field-weighted BM25, pure ----------------------------------------------------------------

def test_a_title_match_outranks_a_body_match(monkeypatch):
    texts = ["Kafka consumer lag\n\nHow we page the on-call engineer when the queue grows beyond limits.",
             "Paging policy\n\nThe kafka consumer lag alert: kafka consumer lag above ten thousand pages."]
    import workbench.retrieval.lexical as lexical

    monkeypatch.setattr(lexical, "TITLE_WEIGHT", 4)       # the weight SciFact's cross-validation picks
    backend = Bm25(texts)
    scores = backend.scores("kafka consumer lag")
    assert scores[0] > scores[1]                           # title 4x; unweighted, the body's 2 mentions win
    assert Vocabulary().document_tokens(texts[0]).count("kafka") == 4
    monkeypatch.undo()
    plain = Vocabulary()
    assert field_tokens(["a"], ["b"], 1) == ["a", "b"]
    unweighted = Bm25(texts).scores("kafka consumer lag")
    assert unweighted[1] > unweighted[0]                   # the default (weight 1): the body's 2 mentions win
    assert plain.document_tokens("no title here") == plain.tokenize("no title here")
    assert split_title("Title\n\nbody") == ("Title", "body") and split_title("a\nb\n\nc") == ("", "a\nb\n\nc")


# -- through a workspace, on both backends ----------------------------------------------------

def test_a_long_fragments_tail_is_found_by_dense_alone(backend_config, tmp_path):
    from conftest import fragment_text

    src = tmp_path / "in"
    src.mkdir()
    (src / "nw-note-settlement.md").write_text(fragment_text("nw-note-settlement", title="Nightly settlement",
                                                             body=long_body(), repo=None))
    for i, body in enumerate(["Snow tyres are required on company cars from November.",
                              "The office heating is switched off in August.",
                              "Our team meets every Monday to plan the week."]):  # cosines 0.07-0.14: above
        (src / f"nw-note-other{i}.md").write_text(fragment_text(f"nw-note-other{i}", title="Notes",  # the long
                                                                body=body, repo=None))   # one's 0.02, below its tail's
    query = "how do penguins survive antarctic winter storms"
    from dataclasses import replace

    from workbench.models import utcnow
    from workbench.retrieval.pipeline import Settings, rank

    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert not wb.ingest([src], actor="kb.sync").errors
        index = wb.retrieval.search_index()
        who = wb.principal("marco.bianchi")
        on = rank(index, query, who, Settings(pipeline="dense", passages=True), now=utcnow())
        assert index.ids[on.order[0]] == "nw-note-settlement"
        assert len(index.passages()) > 3                   # only the long fragment has passages
        assert set(index.passages().owner.tolist()) == {index.pos["nw-note-settlement"]}
        off = rank(index, query, who, replace(Settings(pipeline="dense"), passages=False), now=utcnow())
        assert index.ids[off.order[0]] != "nw-note-settlement"   # its first 256 tokens never say it
        assert wb.store.embedding_count(wb.embedder.name) == 4 + len(index.passages())  # stored, by hash
