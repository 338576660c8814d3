"""A Synapse for the session (``support.matrixserver``); skipped locally without its venv,
a failure in CI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.matrixserver import MatrixServer, running_synapse, skip_or_fail, synapse_missing


@pytest.fixture(scope="session")
def matrix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MatrixServer]:
    missing = synapse_missing()
    if missing is not None:
        skip_or_fail(missing)
    with running_synapse(tmp_path_factory.mktemp("synapse")) as server:
        print(f"\nSynapse answered {server.started_seconds:.1f} s after it was started")
        yield server
