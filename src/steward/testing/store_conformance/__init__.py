"""Conformance suite: the async :class:`~steward.store.Store` as the runtime uses it.

Any backend runs it: a test module imports the tests (pytest collects imported test functions)
and provides two fixtures, ``store`` (a :class:`~steward.store.Store` on a fresh database at the
head revision) and ``clock`` (a :class:`~steward.runtime.clock.SimulatedClock`)::

    import pytest

    pytest.register_assert_rewrite("steward.testing.store_conformance")

    from steward.testing.store_conformance.effects import *  # noqa: E402, F403
    ...

    @pytest.fixture
    async def store() -> AsyncIterator[Store]: ...

Times come from the simulated ``clock``; lease expiry is judged by ``clock.lease_now()`` so no
test waits. The tests are grouped by aggregate, one module each: ``approvals``, ``goals``,
``tasks``, ``channels``, ``mailchannel``, ``reports``, ``control``, ``effects``, ``schedule``,
``history``, ``watches`` (``helpers`` holds what they share).
"""
