"""The optional cross-encoder reranker, loaded from a local folder (a tiny one the test builds)."""

from __future__ import annotations

import pytest

from workbench.errors import UserError


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from workbench.retrieval.embedder import model_dir

    path = tmp_path_factory.mktemp("tiny-ce")
    tokenizer = BertTokenizerFast.from_pretrained(str(model_dir()), local_files_only=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, num_labels=1)
    torch.manual_seed(7)
    BertForSequenceClassification(config).save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return str(path)


def test_reranker_reorders_the_top_n_by_its_own_score(sample_wb, tiny_cross_encoder):
    plain = sample_wb.search("kafka consumer lag", principal="lena.fischer", k=10, trace=False)
    reranked = sample_wb.search("kafka consumer lag", principal="lena.fischer", k=10, reranker=tiny_cross_encoder,
                                trace=False)
    scored = [h for h in reranked.hits if "rerank" in h.scores]
    assert scored, "no hit carries a rerank score"
    values = [h.scores["rerank"] for h in scored]
    assert values == sorted(values, reverse=True)
    assert {h.id for h in reranked.hits + reranked.avoid} <= {h.id for h in
                                                             sample_wb.search("kafka consumer lag",
                                                                              principal="lena.fischer", k=30,
                                                                              trace=False).hits} | {
        h.id for h in plain.avoid} | {h.id for h in reranked.avoid}
    assert [h.id for h in reranked.hits] != [h.id for h in plain.hits] or values


def test_reranker_must_be_a_local_folder(sample_wb, tmp_path):
    with pytest.raises(UserError, match="not a local folder"):
        sample_wb.search("kafka", principal="lena.fischer", reranker="cross-encoder/ms-marco-MiniLM-L-6-v2")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="cannot load the reranker"):
        sample_wb.search("kafka", principal="lena.fischer", reranker=str(tmp_path / "empty"))
