"""Connected accounts over the API, against a real CalDAV server (Radicale), on both backends
and for two tenants: connect with a password, list with status, test, disconnect and forget."""

from __future__ import annotations

from support.api import Api
from support.caldavserver import PersonCalendars


async def test_an_account_is_connected_tested_listed_and_disconnected(
    api: Api, calendars: PersonCalendars
) -> None:
    password = calendars.server.passwords[calendars.user]
    body = {
        "kind": "calendar",
        "name": "home",
        "settings": {"url": calendars.server.url, "username": calendars.user},
        "read_only": True,
        "bounds": {"calendars": ["Work"]},
    }
    async with api.client(api.a.control) as ann, api.client(api.b.control) as bob:
        refused = await ann.post("/accounts", json={**body, "password": "wrong"})
        assert refused.status_code == 400
        assert f"refused the sign-in as {calendars.user}" in refused.json()["detail"]
        bad = await ann.post("/accounts", json={**body, "settings": {"url": "ftp://x/"}})
        assert bad.status_code == 400
        assert "url: Value error" in bad.json()["detail"]

        made = await ann.post("/accounts", json={**body, "password": password})
        assert made.status_code == 201, made.text
        done = made.json()
        assert done["check"].endswith(": 1 calendar (Work)")
        assert done["connection"]["scopes"] == ["calendar.read"]
        assert password not in made.text

        listed = (await ann.get("/accounts")).json()["items"]
        home = next(a for a in listed if a["connection"]["name"] == "home")
        assert (home["title"], home["may"], home["bounds"], home["watch"]) == (
            "Calendar (CalDAV)",
            "read calendars",
            "only the calendar work",
            "not watched yet",
        )
        assert "home" not in [
            a["connection"]["name"] for a in (await bob.get("/accounts")).json()["items"]
        ]

        tested = await ann.post("/accounts/home/test")
        assert (tested.status_code, tested.json()["ok"]) == (200, True)
        assert (await bob.post("/accounts/home/test")).status_code == 404
        assert (await bob.delete("/accounts/home")).status_code == 404
        async with api.client(api.a.read) as reader:
            assert (await reader.delete("/accounts/home")).status_code == 403
            assert (await reader.post("/accounts/home/test")).status_code == 403

        gone = await ann.delete("/accounts/home", params={"forget": "true"})
        assert gone.status_code == 200, gone.text
        assert (gone.json()["secret_deleted"], gone.json()["forgotten"]) == (True, 0)
        assert (await ann.post("/accounts/home/test")).status_code == 404
