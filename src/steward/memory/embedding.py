"""Embedders: text to vectors for semantic recall. Pluggable; none configured means
lexical-only recall.

* :class:`OpenAIEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama,
  a local server), through the official ``openai`` SDK.
* :class:`HashingEmbedder` (in :mod:`steward.testing.embeddings`) — a deterministic stand-in for
  tests and benchmarks; not semantic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

from steward.errors import ConfigError, StewardRuntimeError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from steward.config import Settings

Vectors: TypeAlias = "npt.NDArray[np.float32]"
"""One unit-length float32 vector per row. NumPy is imported by the functions that compute
(``steward goal list`` and the like, which import this through the facade, never do)."""


class Embedder(Protocol):
    name: str
    """Identifies the model: vectors of different models are never compared."""

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length vector per text."""
        ...


def unit(rows: npt.ArrayLike) -> Vectors:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return scaled


def pack(vector: Vectors) -> bytes:
    """A vector as stored: float32, little-endian."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def unpack_many(blobs: Sequence[bytes], dim: int) -> Vectors:
    """Stored vectors as one matrix (blobs of another length are a bug, and refused)."""
    import numpy as np

    data = np.frombuffer(b"".join(blobs), dtype="<f4")
    if data.size != len(blobs) * dim:
        raise StewardRuntimeError("stored vectors do not all have the embedder's dimension")
    return data.reshape(len(blobs), dim).astype(np.float32, copy=False)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 30.0,
        max_retries: int = 2,
        batch: int = 256,
    ) -> None:
        from openai import AsyncOpenAI

        if not model:
            raise ConfigError("an embeddings endpoint needs a model name")
        self.name = f"openai:{model}"
        self._model = model
        self._batch = batch
        self._client = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "unused",
            timeout=timeout_seconds,
            max_retries=max_retries,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np
        from openai import OpenAIError

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            chunk = list(texts[start : start + self._batch])
            try:
                answer = await self._client.embeddings.create(model=self._model, input=chunk)
            except OpenAIError as exc:
                raise StewardRuntimeError(f"embedding failed: {exc}") from exc
            rows.extend(item.embedding for item in sorted(answer.data, key=lambda d: d.index))
        return unit(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def embedder_from(settings: Settings) -> Embedder | None:
    """The embedder the settings name (None: lexical recall only); the local models are
    imported only when chosen."""
    if settings.embeddings == "none":
        return None
    if settings.embeddings == "openai":
        key = settings.embeddings_api_key or settings.model_api_key
        return OpenAIEmbedder(
            model=settings.embeddings_model,
            base_url=settings.embeddings_base_url or settings.model_base_url,
            api_key=key.get_secret_value() if key else None,
        )
    if settings.embeddings == "minilm":
        from steward.memory.minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if settings.embeddings == "multilingual-e5":
        from steward.memory.e5 import MultilingualE5Embedder

        return MultilingualE5Embedder()
    raise ConfigError(
        f"unknown embeddings {settings.embeddings!r}: use none, minilm, multilingual-e5 or openai"
    )
