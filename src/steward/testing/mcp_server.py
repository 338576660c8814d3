"""A small MCP server for tests and the demo: arithmetic, echo, a failing and a slow tool.

Run it as ``python -m steward.testing.mcp_server`` to serve over stdio (what an MCP client
launches as a subprocess), or ``python -m steward.testing.mcp_server --http --port 0`` to serve
streamable HTTP on 127.0.0.1; then the first line it prints is the port it bound and the
endpoint is ``http://127.0.0.1:<port>/mcp``.

Tools:

* ``add(a, b)`` — the sum of two integers;
* ``echo(text)`` — the text back;
* ``fail(message)`` — always answers an error result carrying ``message``;
* ``slow(seconds)`` — sleeps, then says how long it slept (timeout tests);
* ``env(name)`` — an environment variable and the working directory of the server process;
* ``request_info()`` — the ``Authorization`` header (HTTP) and the ``_meta`` of the call;
* ``record(text)`` — appends a line to the file named by ``$STEWARD_MCP_RECORD``.

:func:`serve_http` runs the HTTP flavour in a background thread of the calling process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

HTTP_PATH = "/mcp"


def build_server() -> MCPServer:
    """A fresh server instance (an HTTP session manager runs only once, so one per serve)."""
    server: MCPServer = MCPServer("steward-test", log_level="WARNING")

    @server.tool()
    def add(
        a: Annotated[int, Field(description="First addend")],
        b: Annotated[int, Field(description="Second addend")],
    ) -> int:
        """Add two integers."""
        return a + b

    @server.tool(meta={"dev.steward/roles": {"text": "free_text"}})  # argument roles
    def echo(text: Annotated[str, Field(description="Text to send back")]) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def fail(message: Annotated[str, Field(description="The error to report")]) -> str:
        """Always fail with the given message."""
        raise ToolError(message)

    @server.tool()
    async def slow(seconds: Annotated[float, Field(description="How long to sleep")]) -> str:
        """Sleep, then report how long."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}s"

    @server.tool()
    def env(name: Annotated[str, Field(description="Variable name")]) -> dict[str, str | None]:
        """An environment variable of the server process, and its working directory."""
        return {"value": os.environ.get(name), "cwd": os.getcwd()}

    @server.tool()
    def record(text: Annotated[str, Field(description="A line to append")]) -> str:
        """Append a line to the file named by $STEWARD_MCP_RECORD (tests count the calls)."""
        path = os.environ.get("STEWARD_MCP_RECORD")
        if not path:
            raise ToolError("STEWARD_MCP_RECORD is not set")
        with open(path, "a", encoding="utf-8") as out:
            out.write(text + "\n")
        return f"recorded {text!r}"

    @server.tool()
    def request_info(ctx: Context) -> dict[str, object]:
        """What arrived with this call: the Authorization header and the request _meta."""
        headers = ctx.headers or {}
        meta = dict(ctx.request_context.meta or {})
        return {"authorization": headers.get("authorization"), "meta": meta}

    return server


def _uvicorn_server(server: MCPServer) -> uvicorn.Server:
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH)
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@contextmanager
def serve_http(*, startup_timeout: float = 10.0) -> Iterator[str]:
    """Serve streamable HTTP from a background thread; yields the endpoint URL.

    Binds 127.0.0.1 on a free port. Leaving the block stops the server and joins the thread.
    """
    sock = _bind(0)
    port = sock.getsockname()[1]
    runner = _uvicorn_server(build_server())
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not runner.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}{HTTP_PATH}"
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
        sock.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--port", type=int, default=0, help="HTTP port (0: a free one)")
    opts = parser.parse_args(argv)
    server = build_server()
    if not opts.http:
        server.run("stdio")
        return
    sock = _bind(opts.port)
    print(sock.getsockname()[1], flush=True)
    _uvicorn_server(server).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
