"""Reading values off pages: CSS, XPath, JSON path, readable text; prices in the world's
spellings; missing elements; bad expressions refused in plain words."""

from __future__ import annotations

from decimal import Decimal

import pytest

from steward.connectors.web.extract import ExtractFailed, check_extract, extract, parse_number
from steward.domain.webwatch import MISSING, Extract, Extractor, Value
from steward.errors import UsageError

SHOP = """<!doctype html>
<html><head><title>Laptop</title><style>.price{color:red}</style>
<script>var ignore = "In stock";</script>
<meta property="product:price:amount" content="1049.00"></head>
<body><h1>Laptop 14"</h1><span class="price">1.049,00 €</span>
<p class="stock">In <b>stock</b></p><ul><li>8 GB</li><li>512 GB</li></ul></body></html>"""


@pytest.mark.parametrize(
    ("text", "number", "currency"),
    [
        ("1.299,00 €", Decimal("1299.00"), "€"),
        ("$1,299.99", Decimal("1299.99"), "$"),
        ("CHF 1'299.\u2013", Decimal("1299"), "CHF"),  # an en dash for no cents
        ("Now only 999 €!", Decimal("999"), "€"),
        ("Sold out", None, None),
        ("x" * 500 + " 12 €", None, None),
    ],
)
def test_prices(text: str, number: Decimal | None, currency: str | None) -> None:
    assert parse_number(text) == (number, currency)


def test_css_xpath_and_text() -> None:
    css, page = extract(Extract(how=Extractor.CSS, expr=".price"), SHOP)
    assert css == Value(text="1.049,00 €", number=Decimal("1049.00"), currency="€")
    assert page == 'Laptop 14" 1.049,00 € In stock 8 GB 512 GB'
    assert "ignore" not in page
    meta, _ = extract(
        Extract(how=Extractor.XPATH, expr="//meta[@property='product:price:amount']/@content"),
        SHOP,
    )
    assert meta.number == Decimal("1049.00")
    count, _ = extract(Extract(how=Extractor.XPATH, expr="count(//li)"), SHOP)
    assert count.text == "2"
    text, _ = extract(Extract(how=Extractor.TEXT), SHOP)
    assert text.text == page
    assert text.number is None  # a paragraph is not a price


def test_missing_is_a_value() -> None:
    assert extract(Extract(how=Extractor.CSS, expr=".sale"), SHOP)[0] == MISSING
    assert extract(Extract(how=Extractor.XPATH, expr="//table"), SHOP)[0] == MISSING
    assert extract(Extract(how=Extractor.CSS, expr=".price"), "")[0] == MISSING


def test_json_paths() -> None:
    body = '{"offers": [{"sku": "a", "price": 1049.5, "stock": true}, {"sku": "b"}]}'
    first, page = extract(Extract(how=Extractor.JSON, expr="$.offers[0].price"), body)
    assert first == Value(text="1049.5", number=Decimal("1049.5"))
    assert page == body
    stock, _ = extract(Extract(how=Extractor.JSON, expr="$.offers[0].stock"), body)
    assert stock.text == "true"
    filtered, _ = extract(Extract(how=Extractor.JSON, expr="$.offers[?(@.sku=='b')]"), body)
    assert filtered.text == '{"sku": "b"}'
    assert extract(Extract(how=Extractor.JSON, expr="$.nope"), body)[0] == MISSING
    with pytest.raises(ExtractFailed, match="not JSON"):
        extract(Extract(how=Extractor.JSON, expr="$.a"), SHOP)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (Extract(how=Extractor.CSS, expr="..price"), "not a CSS selector"),
        (Extract(how=Extractor.XPATH, expr="//span["), "not an XPath expression"),
        (Extract(how=Extractor.JSON, expr="$.offers["), "not a JSON path"),
        (Extract(how=Extractor.CSS, expr="  "), "say which css selector"),
        (Extract(how=Extractor.TEXT, expr=".price"), "takes no selector"),
    ],
)
def test_bad_expressions_are_refused(bad: Extract, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        check_extract(bad)
