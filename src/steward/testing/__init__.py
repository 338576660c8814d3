"""Test doubles shipped with Steward, for its own tests, demos and people checking a deployment.

* :mod:`steward.testing.effect_service` — a real HTTP service that applies effects at most
  once per idempotency key, counts every request, and can kill or hold the worker that called
  it (crash and zombie tests of the effect journal).
* :mod:`steward.testing.model_server` — a scripted OpenAI-compatible server (thread, real
  socket, fault injection), so tests exercise the real model adapter.
* :mod:`steward.testing.mcp_server` — a small MCP server (stdio or streamable HTTP).
* :class:`steward.models.scripted.ScriptedModel` — the deterministic model behind them.
"""
