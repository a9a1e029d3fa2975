"""Issue 31: opening and warming a workspace peaks within 1.2x of what stays resident. Storing
vectors was the spike (benchmarks/memory_peak.py, BENCHMARKS.md "Memory"): DuckDB read each text
hash repeated 384 times and grouped by it, +65-110 MB for a 256-vector batch of ``warm()``,
+1.3 GB for 4,096 vectors in one call. Peaks are read from /proc/self/status in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLE

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc/self/status")

_STATUS = '''
import json, sys
from pathlib import Path

def status():
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out

def reset_peak():  # VmHWM := VmRSS (Linux >= 4.0); a failure leaves the peak since start, only stricter
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
'''

_PUT = _STATUS + '''
import numpy as np
from workbench import Workbench

n = int(sys.argv[2])
with Workbench.open(sys.argv[1]) as wb:
    rng = np.random.default_rng(5)
    wb.store.put_embeddings("memory-test", [f"w{i:063d}" for i in range(8)], rng.standard_normal((8, 384), dtype=np.float32))
    matrix = rng.standard_normal((n, 384), dtype=np.float32)
    hashes = [f"{i:064x}" for i in range(n)]
    reset_peak()
    before = status()
    wb.store.put_embeddings("memory-test", hashes, matrix)
    after = status()
print(json.dumps({"before": before, "after": after}))
'''

_WARM = _STATUS + '''
from workbench import Workbench

with Workbench.init(sys.argv[1], config=sys.argv[2]) as wb:
    report = wb.ingest([sys.argv[3]], actor="kb.sync")
    assert not report.errors, report.errors
    wb.embedder.load()
    wb.embedder.encode(["a first batch opens the batch session", "and its tokenizer"])
    reset_peak()
    before = status()
    warmed = wb.warm()
    after = status()
print(json.dumps({"before": before, "after": after, "warmed": warmed}))
'''


def _run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stored_vectors_come_back_bit_for_bit_across_statements(backend_config, tmp_path):
    """More vectors than one statement takes: every one stored once, exactly; a second put of the same
    texts adds nothing; hashes and rows that do not pair up are refused."""
    from workbench import Workbench
    from workbench.errors import StoreError
    from workbench.store.retrieval import PUT_ROWS

    n = PUT_ROWS + 37
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((n, 384)).astype(np.float32)
    matrix[0, :2] = [np.float32(1e-38), np.float32(3.4e38)]
    hashes = [f"{i:064x}" for i in range(n)]
    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert wb.store.put_embeddings("m", hashes, matrix)
        assert wb.store.put_embeddings("m", hashes[-5:], -matrix[-5:])  # already stored: ignored
        assert wb.store.embedding_count("m") == n
        back = wb.store.embeddings("m")
        assert sorted(back) == hashes
        assert np.array_equal(np.stack([back[h] for h in hashes]).view(np.uint32), matrix.view(np.uint32))
        with pytest.raises(StoreError):
            wb.store.put_embeddings("m", ["a", "b"], matrix[:3])
        assert wb.store.embedding_count("m") == n


def test_storing_vectors_costs_memory_near_their_size(backend_config, tmp_path):
    """4,096 vectors (6 MB) stored in one call: the process peaks within 32 MB of what it holds
    after (the store's own cache) and within 256 MB of where it started (it peaked 1.3 GB above
    when each hash was repeated per dimension)."""
    from workbench import Workbench

    ws = tmp_path / "ws"
    Workbench.init(ws, config=backend_config).close()
    out = _run(_PUT, str(ws), "4096")
    assert out["after"]["VmHWM"] - out["after"]["VmRSS"] < 32, out
    assert out["after"]["VmHWM"] - out["before"]["VmRSS"] < 256, out


@pytest.mark.slow
def test_ingest_then_warm_peaks_within_its_resident_size(backend_config, tmp_path):
    """The sample's 216 fragments ingested, then ``warm()`` embeds them (model loaded first, as a
    face does): the peak stays within 24 MB of the resident size after it (0-1.4 MB measured; the
    vectors' insert went 52-55 MB above it here, 65-110 MB for SciFact's 256-text batches)."""
    out = _run(_WARM, str(tmp_path / "ws"), str(backend_config), str(SAMPLE / "fragments"))
    assert out["warmed"]["embedded"] >= 200, out
    assert out["after"]["VmHWM"] - out["after"]["VmRSS"] < 24, out
    assert out["after"]["VmHWM"] / out["after"]["VmRSS"] <= 1.2, out
