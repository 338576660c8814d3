"""Test doubles shipped with Steward, for its own tests and for people checking a deployment.

* :mod:`steward.testing.effect_service` — a real HTTP service that applies effects at most
  once per idempotency key, counts every request, and can kill or hold the worker that called
  it (crash and zombie tests of the effect journal).
"""
