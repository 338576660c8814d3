"""Property-based API testing: Schemathesis generates requests from the OpenAPI document, valid
and invalid, for every operation, and sends them to a real ``steward up`` process over a
socket. No request may make the server fail (a 5xx), and every error it answers with is one
the document declares: its media type, headers and problem schema."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    CheckContext,
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
)

from steward.domain.clock import Clock
from steward.service import Service
from steward.store import Store
from support.startup import scaled

EXAMPLES = 25
"""Generated requests per operation (each operation is one test)."""


def problems_as_declared(ctx: CheckContext, response: schemathesis.Response, case: Any) -> None:
    """An error response is as the document declares it for its status (or ``default``).
    Success responses are not checked: the document does not describe their bodies."""
    if response.status_code >= 400:
        content_type_conformance(ctx, response, case)
        response_headers_conformance(ctx, response, case)
        response_schema_conformance(ctx, response, case)


async def _seed(url: str) -> str:
    """A person with a goal and a memory, and a control token for them."""
    store = await Store.open(url)
    try:
        svc = Service(store, Clock())
        person = await svc.ensure_person()
        await svc.create_goal(person_id=person.id, title="Plan the summer")
        await svc.remember(person_id=person.id, content="Prefers trains to planes")
        _, token = await svc.create_token(person_id=person.id, name="fuzz", scopes=["control"])
        return token
    finally:
        await store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``steward up`` on a fresh SQLite database: its address, and a token."""
    home = tmp_path_factory.mktemp("fuzz")
    db = f"sqlite:///{home / 'steward.db'}"
    token = asyncio.run(_seed(db))
    env = {**os.environ, "STEWARD_DATA_DIR": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "steward.cli.main", "up", "--db", db, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",  # a log line may hold bytes that are not UTF-8
        env=env,
    )
    try:
        banner = "".join(proc.stdout.readline() for _ in range(3))  # type: ignore[union-attr]
        [address] = re.findall(r"open:\s+(http://127\.0\.0\.1:\d+)/", banner)
        yield address, token
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=scaled(30))
        # kept for a failing run; a 5xx fails the test itself (a stop may log the cancelled
        # keep-alive connections, which is no failure)
        Path(home / "server.log").write_text(out)


def test_no_request_makes_the_server_fail(served: tuple[str, str]) -> None:
    address, token = served
    schema = schemathesis.openapi.from_url(f"{address}/api/v1/openapi.json")
    checked = []
    for found in schema.get_all_operations():
        operation = found.ok()
        if operation.path == "/api/v1/stream":
            continue  # an endless stream: tested in test_stream.py

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def no_server_error(case: Any) -> None:
            case.call_and_validate(
                base_url=address,
                headers={"Authorization": f"Bearer {token}"},
                checks=[not_a_server_error, problems_as_declared],
                timeout=30,
            )

        no_server_error()
        checked.append(f"{operation.method.upper()} {operation.path}")
    assert len(checked) > 40, checked  # every operation of the document was exercised
