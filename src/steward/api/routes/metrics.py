"""``GET /metrics``: Prometheus's text exposition of this process's counters and the queue.

It needs an API token with the ``read`` scope (Prometheus sends it as a bearer token:
``authorization: {credentials_file: ...}`` in the scrape config). The queue depth is the
token's person's tasks by status, read from the store at scrape time; the counters (claim
latency, activations, model tokens and cost, sentinel verdicts, effects, watch checks) are this
process's totals, without labels that name a person, a task or anything they contain.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from steward import telemetry
from steward.api.common import Caller

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(service: Caller) -> Response:
    body = telemetry.exposition(await service.count_tasks())
    return Response(body, media_type=CONTENT_TYPE_LATEST)
