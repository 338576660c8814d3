"""The dashboard's watches page: a watch in plain words with a plot of its price, added from
the form (bad input refused, nothing stored), paused, resumed and removed."""

from __future__ import annotations

import html
from datetime import timedelta
from decimal import Decimal

from steward.domain.webwatch import Value
from steward.store.webwatches import CheckResult
from support.web import Site


async def _read(site: Site, watch_id: str, prices: list[int]) -> None:
    """Checks as the runner records them: one reading per new price, a day apart."""
    store, at = site.store, site.clock.now()
    for amount in prices:
        taken = await store.webwatches.claim_due(
            holder="t", now=at + timedelta(days=400), limit=10, lease_seconds=60, lease_now=at
        )
        [claimed] = [w for w in taken if w.id == watch_id]
        await store.webwatches.release([w.id for w in taken if w.id != watch_id], holder="t")
        await store.webwatches.record_check(
            claimed,
            holder="t",
            result=CheckResult(
                at=at,
                next_check_at=at,
                value=Value(text=f"€{amount}", number=Decimal(amount), currency="€"),
                matched=False,
                changed=True,
                etag=None,
                last_modified=None,
            ),
        )
        at += timedelta(days=1)


async def test_the_page_says_it_in_words_with_a_plot(site: Site) -> None:
    await _read(site, site.a.watch.id, [1049, 1099, 999])
    me = await site.session(site.a.control)
    text = html.unescape((await me.get("/watches")).text)
    assert "ann's laptop at shop.example: €999 → checks hourly, tells you when below 1,000" in text
    assert "<polyline points=" in text
    assert "lowest €999, highest €1,099" in text
    assert site.b.watch.name not in text


async def test_add_from_the_form_then_pause_resume_remove(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(
        "/watches",
        url="https://shop.example/phone",
        how="css",
        select=".price",
        below="500",
        contains="In stock",
        every="2h",
        name="Phone",
        goal=site.a.goal.id,
    )
    assert answer.status_code == 303, answer.text
    text = html.unescape((await me.get("/watches")).text)
    assert "Phone at shop.example: not checked yet → checks every 2 hours, tells you when below "
    assert 'below 500 and the page says "In stock"' in text
    [phone] = [
        w for w in await site.owner.list_watches(person_id=site.a.person.id) if w.name == "Phone"
    ]
    assert phone.trigger_id is not None
    await me.post(f"/watches/{phone.id}", action="pause")
    assert not (await site.owner.get_watch(phone.id)).enabled
    await me.post(f"/watches/{phone.id}", action="resume")
    assert (await site.owner.get_watch(phone.id)).enabled
    await me.post(f"/watches/{phone.id}", action="remove")
    assert phone.id not in {w.id for w in await site.owner.list_watches(person_id=site.a.person.id)}


async def test_bad_input_is_refused_in_words_and_nothing_is_stored(site: Site) -> None:
    me = await site.session(site.a.control)
    before = await site.owner.list_watches(person_id=site.a.person.id)
    for fields, words in [
        ({"url": "https://x.io/", "how": "css", "select": "..p"}, "not a CSS selector"),
        ({"url": "https://x.io/", "how": "css", "select": ".p", "every": "10s"}, "once a minute"),
        ({"url": "https://x.io/", "how": "css", "select": ".p", "below": "lots"}, "a number"),
        ({"url": "x.io", "how": "text"}, "URL"),
    ]:
        answer = await me.post("/watches", **fields)
        assert answer.status_code == 400, (fields, answer.text)
        assert words in html.unescape(answer.text), fields
    assert await site.owner.list_watches(person_id=site.a.person.id) == before
