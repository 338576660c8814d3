"""Serving the app with uvicorn inside the caller's event loop, next to the runtime (``steward
up``), or on a free loopback port (tests, the demo)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn


@asynccontextmanager
async def serving(app: Any, *, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://127.0.0.1:<port>``)."""
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
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
