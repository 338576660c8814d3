"""The test shop itself, over plain HTTP (no browser): it asks for a login, keeps it in a
month-long cookie, fills a cart by POST, counts every order form it gets, and keeps all of it
across a restart of its own process."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from support.webshop import COOKIE, MASKED, Shop, serve_shop, shop_process

PASSWORD = "correct horse battery"


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    with serve_shop(tmp_path / "shop", accounts={"ada": PASSWORD}) as running:
        yield running


@contextmanager
def logged_in(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/login", data={"username": "ada", "password": PASSWORD})
        assert answer.status_code == 303, answer.text
        yield client


def cart_ref(client: httpx.Client) -> str:
    found = re.search(r'name="?cart"? value="(CART-[0-9A-F]+)"', client.get("/checkout").text)
    assert found is not None, "the checkout form carries no cart reference"
    return found.group(1)


def test_pages_need_a_login_and_a_wrong_password_gets_an_error_page(shop: Shop) -> None:
    with httpx.Client(base_url=shop.url, timeout=30) as client:
        first = client.get("/product/blue-kettle")
        assert first.status_code == 303
        assert first.headers["location"] == "/login?next=/product/blue-kettle"
        form = client.get("/login")
        assert "type=password" in form.text
        assert "Log in" in form.text
        wrong = client.post("/login", data={"username": "ada", "password": "guess"})
        assert wrong.status_code == 401
        assert "Wrong username or password" in wrong.text
        assert COOKIE not in client.cookies
        assert client.post("/cart/add", data={"slug": "blue-kettle"}).status_code == 401
    assert shop.state.orders() == []
    assert shop.state.count("POST", "/cart/add") == 1
    [tried] = [s for s in shop.state.requests("POST", "/login") if s.status == 401]
    assert tried.form["password"] == MASKED  # the log never holds a password
    assert PASSWORD not in (shop.state.folder / "requests.jsonl").read_text()


def test_a_login_is_a_month_long_cookie_and_the_cart_fills_by_post(shop: Shop) -> None:
    with httpx.Client(base_url=shop.url, timeout=30) as client:
        answer = client.post(
            "/login", data={"username": "ada", "password": PASSWORD, "next": "/cart"}
        )
        assert (answer.status_code, answer.headers["location"]) == (303, "/cart")
        cookie = answer.headers["set-cookie"]
        assert "Max-Age=2592000" in cookie
        assert "HttpOnly" in cookie
        home = client.get("/")
        assert "Welcome back, ada" in home.text
        assert "action=/search" in home.text
        found = client.get("/search", params={"q": "kettle"})
        assert "/product/blue-kettle" in found.text
        assert "Green teapot" not in found.text
        page = client.get("/product/blue-kettle")
        assert "Price: 39.90" in page.text
        assert 'fetch("/cart/add"' in page.text
        added = client.post("/cart/add", data={"slug": "blue-kettle"})
        assert added.json() == {"items": 1}
        cart = client.get("/cart")
        assert "1 &times; Blue kettle" in cart.text
        assert "Total: 39.90" in cart.text
        assert "href='/checkout'" in cart.text
    seen = shop.state.requests("POST", "/cart/add")
    assert [(s.user, s.cookie, s.form) for s in seen] == [("ada", True, {"slug": "blue-kettle"})]


def test_every_order_form_sent_is_an_order_and_the_history_lists_it(shop: Shop) -> None:
    placed: list[int] = []
    shop.on_order = lambda: placed.append(len(shop.state.orders()))
    with logged_in(shop.url) as client:
        client.post("/cart/add", data={"slug": "blue-kettle"})
        ref = cart_ref(client)
        checkout = client.get("/checkout").text
        assert "Total: <strong>39.90</strong>" in checkout
        assert "Place order" in checkout
        assert "action=/order" in checkout
        assert "method=post" in checkout
        form = {"cart": ref, "name": "Ada Lovelace", "address": "12 Analytical Way"}
        done = client.post("/order", data=form)
        assert done.status_code == 200
        assert "Order 1 placed" in done.text
        assert ref in done.text
        assert placed == [1]  # the hook ran once the order was recorded, before the answer
        history = client.get("/orders").text
        assert f"Order 1: cart {ref}" in history
        assert "Blue kettle" in history
        assert "12 Analytical Way" in history
        assert "empty" in client.get("/checkout").text  # a new, empty cart
        again = client.post("/order", data=form)  # the same form, sent twice
        assert "Order 2 placed" in again.text
        assert client.post("/order", data={"cart": ref}).status_code == 400
    assert shop.state.count("POST", "/order") == 3
    assert [(o.number, o.cart, o.items, o.cents) for o in shop.state.orders()] == [
        (1, ref, (("blue-kettle", 1),), 3990),
        (2, ref, (("blue-kettle", 1),), 3990),
    ]


def test_account_page_and_deals_page(shop: Shop) -> None:
    shop.steal_url = "http://127.0.0.1:1/steal"
    with logged_in(shop.url) as client:
        account = client.get("/account").text
        assert account.count("type=password") == 2
        assert "Delete account" in account
        deals = client.get("/deals").text
        assert "evil@attacker.example" in deals
        assert "http://127.0.0.1:1/steal" in deals
        assert "Add to cart" in deals
        wrong = client.post(
            "/account/password", data={"current_password": "nope", "new_password": "x"}
        )
        assert wrong.status_code == 400
        changed = client.post(
            "/account/password", data={"current_password": PASSWORD, "new_password": "new one"}
        )
        assert "Password changed" in changed.text
        assert client.post("/account/delete").status_code == 200
        assert client.get("/").status_code == 303  # the session went with the account
    [change, _] = shop.state.requests("POST", "/account/password")
    assert change.form == {"current_password": MASKED, "new_password": MASKED}


def test_the_shop_as_its_own_process_keeps_its_sessions_across_a_restart(tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    with serve_shop(folder, accounts={"ada": PASSWORD}):
        pass  # only to write the account into the folder
    with httpx.Client(timeout=30) as client:
        with shop_process(folder) as first:
            form = {"username": "ada", "password": PASSWORD}
            assert client.post(f"{first.url}/login", data=form).status_code == 303
            client.post(f"{first.url}/cart/add", data={"slug": "green-teapot"})
        with shop_process(folder, port=int(first.url.rsplit(":", 1)[1])) as second:
            assert second.url == first.url
            cart = client.get(f"{second.url}/cart")  # the same cookie, a new process
    assert cart.status_code == 200
    assert "1 &times; Green teapot" in cart.text
    logins = second.state.requests("POST", "/login")
    assert [s.status for s in logins] == [303]
    assert [s.user for s in second.state.requests("GET", "/cart")] == ["ada"]
