"""What :mod:`memory_eval`'s two evaluations share: the rows of the table (search modes, and
hybrid with a reranker when there is one), the embedder and the reranker they use."""

from __future__ import annotations

import importlib
import pkgutil
from inspect import signature
from typing import Any

import steward.memory
from bench_support import percentile
from steward.memory.book import MemoryBook
from steward.memory.embedding import Embedder
from steward.memory.rerank import Reranker
from steward.memory.retrieval import Retriever, SearchMode
from steward.testing.embeddings import HashingEmbedder

KS = (5, 10)
RERANKED = "hybrid+rerank"
MODES = (SearchMode.LEXICAL.value, SearchMode.SEMANTIC.value, SearchMode.HYBRID.value, RERANKED)


def named(spec: str) -> Any:
    """An instance of the class ``module:Class`` names (built without arguments): for models
    added after this script, e.g. ``steward.memory.e5:MultilingualE5Embedder``."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)()


def pick_embedder(choice: str) -> tuple[Embedder, str]:
    """The embedder to use, and a note on what it is."""
    if ":" in choice:
        embedder: Embedder = named(choice)
        return embedder, choice
    if choice not in ("auto", "minilm", "hashing"):
        raise ValueError(f"--embedder: auto, minilm, hashing or module:Class, not {choice!r}")
    if choice in ("auto", "minilm"):
        try:
            from steward.memory.minilm import MiniLMEmbedder

            return MiniLMEmbedder(), "all-MiniLM-L6-v2 (int8 ONNX, onnxruntime on the CPU)"
        except Exception as exc:
            if choice == "minilm":
                raise
            reason = f"{type(exc).__name__}: {exc}"
            return HashingEmbedder(), (
                f"HashingEmbedder, NOT semantic (MiniLM unavailable: {reason}); semantic and "
                "hybrid figures only measure word overlap"
            )
    return (
        HashingEmbedder(),
        "HashingEmbedder, NOT semantic; semantic and hybrid figures only measure word overlap",
    )


def pick_reranker(choice: str) -> tuple[Reranker | None, str]:
    """A reranker for the hybrid+rerank row, or None and why not. Found by feature: the
    Retriever must take one, and a ``*Reranker`` class under ``steward.memory`` must build."""
    if choice == "none":
        return None, "not asked for (--reranker none)"
    if ":" in choice:
        reranker: Reranker = named(choice)
        return reranker, f"{reranker.name} ({choice})"
    if choice != "auto":
        raise ValueError(f"--reranker: auto, none or module:Class, not {choice!r}")
    if "reranker" not in signature(Retriever).parameters or (
        "rerank" not in signature(Retriever.search).parameters
    ):
        return None, "the Retriever takes no reranker yet"
    failures = []
    for info in pkgutil.iter_modules(steward.memory.__path__):
        try:
            module = importlib.import_module(f"steward.memory.{info.name}")
        except ImportError as exc:  # an optional extra not installed
            failures.append(f"steward.memory.{info.name}: {exc}")
            continue
        for name, value in vars(module).items():
            if not (
                isinstance(value, type)
                and name.endswith("Reranker")
                and value.__module__ == module.__name__
                and not getattr(value, "_is_protocol", False)
            ):
                continue
            try:
                found: Reranker = value()
            except Exception as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            return found, f"{found.name} ({module.__name__}.{name})"
    return None, "; ".join(failures) or "no reranker under steward.memory"


def with_reranker(book: MemoryBook, reranker: Reranker | None) -> None:
    """Give ``book`` a retriever that reranks when asked (keyword passed by name: the
    Retriever only takes it once the reranker contract is in)."""
    if reranker is not None:
        book.retriever = Retriever(book.store, embedder=book.embedder, **{"reranker": reranker})


def mode_arguments(mode: str, reranker: Reranker | None) -> dict[str, Any]:
    """The search arguments for a row of the table (``rerank`` only where supported)."""
    if mode == RERANKED:
        return {"mode": SearchMode.HYBRID, "rerank": True}
    return {"mode": SearchMode(mode), **({"rerank": False} if reranker is not None else {})}


def latency(seconds: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(seconds, 50) * 1000, 2),
        "p99": round(percentile(seconds, 99) * 1000, 2),
    }
