"""Groups of near-identical short texts (questions agents asked) by cosine similarity of their
embeddings: greedy leader clustering.

Texts are visited most frequent first; each joins the group whose leader (its first, most asked
member) it is most similar to, when that cosine is at least the threshold, or else leads a new
group. Every member is therefore within the threshold of its leader, the result does not depend on
the order the rows arrived in (ties: the earlier row), and the cost is one matrix-vector product per
text against the leaders so far. Pure: vectors in, index lists out; no model, no I/O.

``SAME_QUESTION`` is the threshold the gap report uses, measured with the bundled all-MiniLM-L6-v2
on the sample golden set (sample_corpus/golden.yaml):

- its negative queries (32 distinct questions the corpus cannot answer) are at most 0.549 apart
  (neg-q001 "upgrade the Kafka brokers" / neg-q029 "nightly backup of the Kafka cluster");
- over all 154 golden queries, the most similar pair of different questions is 0.699
  ("NWLED-7040 errors when reserving a payout" / "settlement ingest fails with NWLED-7031");
- rephrasings of the negatives (tests/test_gaps.py) are 0.76 to 0.99 from the question they
  rephrase, and the same question asked in the other org's words is 0.86 to 1.0.

0.73 sits between the closest different questions (0.699) and the loosest rephrasing (0.762).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

SAME_QUESTION = 0.73


def leader_clusters(vectors: np.ndarray, threshold: float = SAME_QUESTION,
                    weights: Sequence[float] | None = None) -> list[list[int]]:
    """Groups of row indices of ``vectors`` (L2-normalised, one row per text). Rows are visited by
    descending ``weight`` (e.g. how often the text was asked), then by index; a group lists its
    leader first, then its members in visiting order. Groups come in their leaders' visiting order."""
    matrix = np.asarray(vectors, dtype=np.float32)
    n = len(matrix)
    if n == 0:
        return []
    if matrix.ndim != 2:
        raise ValueError("vectors must be a 2-D array, one row per text")
    w = np.zeros(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError("weights must have one value per row")
    order = sorted(range(n), key=lambda i: (-w[i], i))
    leaders: list[int] = []
    groups: list[list[int]] = []
    for i in order:
        if leaders:
            sims = matrix[leaders] @ matrix[i]
            best = int(np.argmax(sims))  # the first of equal bests: the earlier leader
            if sims[best] >= threshold:
                groups[best].append(i)
                continue
        leaders.append(i)
        groups.append([i])
    return groups
