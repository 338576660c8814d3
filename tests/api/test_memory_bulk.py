"""``POST /memories/bulk`` over a real socket, on both backends: JSON lines or a JSON array in,
one result per statement out, for the token's person only; the same body twice writes nothing
new; a bad statement refuses the body, naming it; a body over the import limit is a 413."""

from __future__ import annotations

import json

from steward.api.routes.memory import MOST_IMPORT_BYTES
from support.api import Api


async def test_statements_in_as_json_lines_or_an_array_once(api: Api) -> None:
    lines = "\n".join(
        json.dumps(item)
        for item in [
            {"content": "Ann's bike is a green Gazelle", "ref": "m1"},
            {"content": "Ann's bike is a green Gazelle.", "ref": "m2"},
            {
                "content": "Ann moved to Utrecht",
                "kind": "fact",
                "slot": "office_city",
                "observed_at": "2025-03-01T08:00:00+01:00",
                "subjects": ["Utrecht"],
            },
            {"content": "Ann's landlord wants the rent by the 3rd", "trusted": False},
        ]
    )
    async with api.client(api.a.control) as client:
        first = await client.post(
            "/memories/bulk",
            params={"import_name": "phone-notes"},
            content=lines,
            headers={"Content-Type": "application/x-ndjson"},
        )
        assert first.status_code == 200, first.text
        body = first.json()
        assert (body["created"], body["duplicate"], body["forgotten"]) == (3, 1, 0)
        assert [i["outcome"] for i in body["items"]] == [
            "created",
            "duplicate",
            "created",
            "created",
        ]
        bike = body["items"][0]["memory"]
        assert [s["ref"] for s in bike["sources"]] == ["phone-notes/m1", "phone-notes/m2"]
        assert body["items"][3]["memory"]["status"] == "candidate"

        again = await client.post(
            "/memories/bulk", params={"import_name": "phone-notes"}, content=lines
        )
        assert (again.json()["created"], again.json()["duplicate"]) == (0, 4)

        array = await client.post("/memories/bulk", json=[{"content": "Ann's cat is Miso"}])
        assert array.json()["created"] == 1
        hits = await client.get("/memories/search", params={"q": "Utrecht Gazelle Miso"})
        assert sorted(h["memory"]["content"] for h in hits.json()["items"]) == [
            "Ann moved to Utrecht",
            "Ann's bike is a green Gazelle",
            "Ann's cat is Miso",
        ]

        before = (await client.get("/memories", params={"limit": 100})).json()
        bad = await client.post(
            "/memories/bulk",
            content='{"content": "Ann likes figs"}\n{"content": "x", "importance": 3}\n',
        )
        assert bad.status_code == 400
        assert "line 2: importance is a number from 0 to 1" in bad.json()["detail"]
        too_big = await client.post(
            "/memories/bulk", content=b"[" + b" " * MOST_IMPORT_BYTES + b"]"
        )
        assert too_big.status_code == 413
        assert (await client.get("/memories", params={"limit": 100})).json() == before
    async with api.client(api.b.control) as client:
        others = await client.get("/memories/search", params={"q": "Gazelle"})
        assert others.json()["items"] == []
