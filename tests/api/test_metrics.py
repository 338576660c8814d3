"""``GET /metrics`` over a real socket: Prometheus's text format, behind a ``read`` token, with
the token's person's tasks by status read from the store at scrape time."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.store import Store
from support.api import Api


async def scrape(api: Api, token: str | None) -> httpx.Response:
    """What Prometheus gets at ``/metrics`` (beside the API, not under its prefix)."""
    root = api.base.rsplit("/api/", 1)[0]
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.get(f"{root}/metrics", headers=headers)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_metrics_need_a_token_and_show_the_persons_queue(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    refused = await scrape(api, None)
    assert refused.status_code == 401
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert (await scrape(api, "stw_not-a-token")).status_code == 401

    for _ in range(2):
        await store.tasks.create_task(
            TaskSpec(kind="noop"), person_id=api.a.person.id, now=clock.now()
        )
    mine = await store.tasks.count_tasks(person_id=api.a.person.id)
    answer = await scrape(api, api.a.read)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(answer.text)}
    queue = {s.labels["status"]: s.value for s in families["steward_tasks"].samples}
    assert queue == {status: float(n) for status, n in mine.items()}
    assert queue["pending"] >= 2
    for name in (
        "steward_claim_latency_seconds",
        "steward_activations",
        "steward_model_tokens",
        "steward_model_cost_usd",
        "steward_sentinel_decisions",
        "steward_effects",
        "steward_watch_checks",
    ):
        assert name in families, name
    # bob's tasks are not in ann's queue
    assert await store.tasks.count_tasks(person_id=api.b.person.id)
    assert sum(queue.values()) == sum(mine.values())
