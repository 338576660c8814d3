"""Serving the app with uvicorn inside the caller's event loop, next to the runtime (``steward
up``, ``steward demo``), or on a free loopback port (tests)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from steward.errors import UsageError

GRACE_SECONDS = 1
"""How long a stop waits for open requests: an open dashboard keeps its live stream (SSE)
open for ever, and a stop must still stop."""


@asynccontextmanager
async def serving(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
) -> AsyncIterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://127.0.0.1:<port>``).
    A port in use is a :class:`UsageError` saying so."""
    if port:
        check_port_free(host, port)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            log_config=None,  # its records go through Steward's logging (steward.logs)
            lifespan="off",
            timeout_graceful_shutdown=GRACE_SECONDS,
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises why it could not start
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()
    try:
        yield f"http://{bound[0]}:{bound[1]}"
    finally:
        server.should_exit = True
        await task


def check_port_free(host: str, port: int) -> None:
    """Fail with a clear message rather than uvicorn's exit when the port is taken."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            raise UsageError(
                f"port {port} on {host} is in use (is Steward already running?); stop that, "
                "or choose another with --port (0: any free one)"
            ) from None
