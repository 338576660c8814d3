"""A local OpenAI-compatible model server that answers from a script.

Tests run the real adapter (:class:`~steward.models.openai_compat.OpenAIModel`, the ``openai``
SDK, HTTP, SSE) against it::

    with run_model_server(ScriptedModel([say("hello")])) as server:
        model = OpenAIModel(name="scripted", base_url=server.url, api_key=server.api_key)

The server runs in a background thread of the calling process, so other processes (workers
killed and restarted by crash tests) can use it too, while the test reads ``server.requests``
and ``server.model`` directly. ``fail_next`` injects errors: rate limits, 5xx, context overflow.

Endpoints: ``GET /v1/models`` and ``POST /v1/chat/completions`` (``stream: true`` included,
with a usage chunk when ``stream_options.include_usage``). Requests need
``Authorization: Bearer <api_key>``; an unknown model gets 404 ``model_not_found``.

For demos: ``python -m steward.testing.model_server --script script.json --port 8399`` serves a
JSON script (format: :func:`~steward.models.scripted.load_script`) until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp

from steward.models.base import Message, ModelResponse, Role, ToolCall, ToolSpec
from steward.models.errors import ModelError
from steward.models.scripted import ScriptedModel, load_script, text_chunks
from steward.testing.embeddings import HashingEmbedder

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",  # OpenAI's newer name for system instructions
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


@dataclass(kw_only=True, frozen=True)
class _Failure:
    status: int
    code: str | None
    message: str
    retry_after: float | None


class ModelServer:
    """A running server: where it is, what it saw, and its failure switch."""

    def __init__(
        self,
        model: ScriptedModel,
        *,
        url: str,
        api_key: str,
        served_models: Sequence[str],
        embedder: HashingEmbedder | None = None,
    ) -> None:
        self.model = model
        """Answers the requests; read its ``calls`` and ``requests`` to see what was asked."""
        self.url = url
        """Base URL ending in ``/v1``, what an OpenAI client takes as ``base_url``."""
        self.api_key = api_key
        """The only key it accepts."""
        self.served_models = list(served_models)
        """Model names it serves; others get 404."""
        self.report_usage = True
        """Whether answers carry usage; switch off to act like a server that reports none."""
        self.embedder = embedder or HashingEmbedder()
        """Answers ``/v1/embeddings`` (for any model name)."""
        self._lock = threading.Lock()
        self._requests = 0
        self._failures: deque[_Failure] = deque()

    @property
    def requests(self) -> int:
        """Chat completion requests received, refused and failed ones included."""
        with self._lock:
            return self._requests

    def fail_next(
        self,
        status: int,
        *,
        code: str | None = None,
        message: str = "",
        times: int = 1,
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``times`` (authorized) chat completion requests with an error:
        ``status`` and an OpenAI-style error body, plus ``Retry-After`` (seconds, also as
        ``retry-after-ms``) when ``retry_after`` is given."""
        failure = _Failure(
            status=status,
            code=code,
            message=message or f"injected failure (HTTP {status})",
            retry_after=retry_after,
        )
        with self._lock:
            self._failures.extend([failure] * times)

    def _count(self) -> None:
        with self._lock:
            self._requests += 1

    def _take_failure(self) -> _Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def app(self) -> FastAPI:
        """The ASGI application."""
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

        @app.get("/v1/models")
        async def list_models() -> dict[str, Any]:
            return {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "steward"}
                    for name in self.served_models
                ],
            }

        @app.post("/v1/embeddings")
        async def embeddings(request: Request) -> Response:
            if request.headers.get("authorization") != f"Bearer {self.api_key}":
                return _error(401, "Incorrect API key provided.", code="invalid_api_key")
            try:
                body = await request.json()
                texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
                model_name = str(body["model"])
            except (ValueError, KeyError, TypeError) as exc:
                return _error(400, f"malformed request: {exc!r}")
            vectors = await self.embedder.embed([str(t) for t in texts])
            return JSONResponse(
                {
                    "object": "list",
                    "model": model_name,
                    "data": [
                        {"object": "embedding", "index": i, "embedding": row.tolist()}
                        for i, row in enumerate(vectors)
                    ],
                    "usage": {"prompt_tokens": 0, "total_tokens": 0},
                }
            )

        @app.post("/v1/chat/completions")
        async def chat_completions(request: Request) -> Response:
            self._count()
            if request.headers.get("authorization") != f"Bearer {self.api_key}":
                return _error(401, "Incorrect API key provided.", code="invalid_api_key")
            try:
                body = await request.json()
                model_name = body["model"]
                messages = [from_openai_message(m) for m in body["messages"]]
                tools = [from_openai_tool(t) for t in body.get("tools") or ()]
            except (ValueError, KeyError, TypeError) as exc:
                return _error(400, f"malformed request: {exc!r}")
            if model_name not in self.served_models:
                message = f"The model `{model_name}` does not exist or you do not have access."
                return _error(404, message, code="model_not_found")
            failure = self._take_failure()
            if failure is not None:
                return _error(
                    failure.status,
                    failure.message,
                    code=failure.code,
                    retry_after=failure.retry_after,
                )
            try:
                answer = await self.model.complete(messages, tools)
            except ModelError as exc:
                # The script ran out: a mistake in the test, not trouble worth retrying.
                return _error(400, str(exc), code="script_exhausted")
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = _stream_chunks(answer, include_usage and self.report_usage)
                return StreamingResponse(_sse(chunks), media_type="text/event-stream")
            return JSONResponse(_completion(answer, self.report_usage))

        return app


def _error(
    status: int, message: str, *, code: str | None = None, retry_after: float | None = None
) -> JSONResponse:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    headers = {}
    if retry_after is not None:
        headers = {"retry-after": f"{retry_after:g}", "retry-after-ms": f"{retry_after * 1000:g}"}
    content = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(content, status_code=status, headers=headers)


def _completion_id() -> str:
    return f"chatcmpl-scripted-{time.monotonic_ns()}"


def _usage(answer: ModelResponse) -> dict[str, int]:
    return {
        "prompt_tokens": answer.usage.input_tokens,
        "completion_tokens": answer.usage.output_tokens,
        "total_tokens": answer.usage.total_tokens,
    }


def _completion(answer: ModelResponse, report_usage: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content or None}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in answer.tool_calls
        ]
    data: dict[str, Any] = {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": answer.model,
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
    }
    if report_usage:
        data["usage"] = _usage(answer)
    return data


def _stream_chunks(answer: ModelResponse, include_usage: bool) -> list[dict[str, Any]]:
    """The answer as chat completion chunks: text in pieces, each tool call as a header piece
    (id, name) followed by its arguments in two fragments, as real servers send them."""
    ident, created = _completion_id(), int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": answer.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in text_chunks(answer.content, 3)]
    for index, call in enumerate(answer.tool_calls):
        header = {"index": index, "id": call.id, "type": "function"}
        header["function"] = {"name": call.name, "arguments": ""}
        chunks.append(chunk({"tool_calls": [header]}))
        for piece in text_chunks(call.arguments, 2):
            fragment = {"index": index, "function": {"arguments": piece}}
            chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, answer.finish_reason))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _usage(answer)
        chunks.append(last)
    return chunks


async def _sse(chunks: list[dict[str, Any]]) -> AsyncIterator[str]:
    for data in chunks:
        yield f"data: {json.dumps(data)}\n\n"
    yield "data: [DONE]\n\n"


def from_openai_message(data: dict[str, Any]) -> Message:
    """A chat completions message (as JSON) as ours."""
    role = _ROLES.get(str(data.get("role")))
    if role is None:
        raise ValueError(f"unknown message role {data.get('role')!r}")
    calls = tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str(c["function"]["name"]),
            arguments=str(c["function"].get("arguments") or ""),
        )
        for c in data.get("tool_calls") or ()
    )
    return Message(
        role=role,
        content=_text_content(data.get("content")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def from_openai_tool(data: dict[str, Any]) -> ToolSpec:
    """A function tool (as JSON) as our tool spec."""
    function = data["function"]
    return ToolSpec(
        name=str(function["name"]),
        description=str(function.get("description") or ""),
        parameters=dict(function.get("parameters") or {}),
    )


def _text_content(content: Any) -> str:
    """A message content as text: a string, or the joined text of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))


# --- running it ----------------------------------------------------------------------------


@contextmanager
def serve_in_thread(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a background thread; yields ``http://host:port``.

    The socket is bound before the thread starts (so ``port=0`` picks a free port and its
    number is known at once); leaving the block stops the server and joins the thread.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_config=None,  # leave the host application's logging alone
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{bound_port}", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10.0
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {host}:{bound_port} did not start")
            time.sleep(0.005)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        yield f"http://{shown}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@contextmanager
def run_model_server(
    model: ScriptedModel,
    *,
    api_key: str = "test-key",
    served_models: Sequence[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    embedder: HashingEmbedder | None = None,
) -> Iterator[ModelServer]:
    """Serve ``model`` as an OpenAI-compatible endpoint for the duration of the block."""
    names = list(served_models) if served_models is not None else [model.name]
    server = ModelServer(model, url="", api_key=api_key, served_models=names, embedder=embedder)
    with serve_in_thread(server.app(), host=host, port=port) as base:
        server.url = f"{base}/v1"
        yield server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m steward.testing.model_server",
        description="Serve a scripted model as an OpenAI-compatible endpoint.",
    )
    parser.add_argument("--script", type=Path, required=True, help="JSON script of answers")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8399, help="0 picks a free port")
    parser.add_argument("--api-key", default="test-key", help="the key clients must send")
    parser.add_argument("--model", default="scripted", help="the model name it serves")
    parser.add_argument(
        "--loop-last", action="store_true", help="repeat the last answer when the script ends"
    )
    args = parser.parse_args(argv)
    model = ScriptedModel(load_script(args.script), name=args.model, loop_last=args.loop_last)
    with run_model_server(model, api_key=args.api_key, host=args.host, port=args.port) as server:
        print(f"serving model {args.model!r} at {server.url} (api key {args.api_key!r})")
        print("press Ctrl-C to stop", flush=True)
        with suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
