"""Reading a value off a page: CSS selector, XPath, JSON path, or the readable text.

HTML is parsed with lxml (CSS selectors through cssselect), JSON paths with jsonpath-ng, and
numbers and prices — ``1.299,00 €``, ``$1,299.99``, ``CHF 1'299.-`` — with price-parser. A
selector that matches nothing gives :data:`~steward.domain.webwatch.MISSING`: an element that
disappears is a value too. Expressions are checked when a watch is set up
(:func:`check_extract`), so a bad one is refused at the door, not found failing at 3 a.m.
"""

from __future__ import annotations

import functools
import json
from copy import deepcopy as copy_element
from decimal import Decimal
from typing import Any

import lxml.html
from cssselect import SelectorError
from cssselect import parse as parse_css
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext.parser import parse as parse_json_path
from jsonpath_ng.jsonpath import JSONPath
from lxml import etree
from lxml.cssselect import CSSSelector
from price_parser import Price

from steward.domain.webwatch import MISSING, Extract, Extractor, Value
from steward.errors import UsageError

MAX_VALUE_CHARS = 20_000
"""Characters of a value kept and compared (a whole page's text beyond this is cut)."""
MAX_NUMBER_CHARS = 200
"""Only text this short is read as a number: a paragraph holds many numbers, not a price."""
_INVISIBLE = ("script", "style", "noscript", "template", "head")
_BLOCKS = (
    *("p", "div", "br", "li", "ul", "ol", "dt", "dd", "tr", "td", "th", "table", "section"),
    *("article", "header", "footer", "nav", "main", "aside", "h1", "h2", "h3", "h4", "h5"),
    *("h6", "blockquote", "pre", "form", "label", "option", "button", "hr", "img"),
)


class ExtractFailed(UsageError):
    """The page is not what the watch reads (JSON path on a page that is not JSON)."""


def check_extract(extract: Extract) -> None:
    """Refuse, in plain words, an expression that does not parse."""
    if extract.how is Extractor.TEXT:
        if extract.expr:
            raise UsageError("the page's text takes no selector")
        return
    if not extract.expr or not extract.expr.strip():
        raise UsageError(f"say which {extract.how.value} selector to read")
    _compiled(extract)


def extract(extract: Extract, body: str, content_type: str = "text/html") -> tuple[Value, str]:
    """The value ``extract`` reads off a page with text ``body``, and the page's readable text
    (what ``contains`` conditions look in). :class:`ExtractFailed` when the page cannot be
    read that way."""
    if extract.how is Extractor.JSON:
        return _from_json(extract, body), body
    doc = _html(body)
    page = readable_text(doc)
    if extract.how is Extractor.TEXT:  # a whole page is not a price
        return Value(text=page[:MAX_VALUE_CHARS]), page
    if doc is None:
        return MISSING, page
    select = _compiled(extract)
    assert isinstance(select, etree.XPath)  # a CSSSelector is one too
    return _value(_first_text(select(doc))), page


def readable_text(doc: lxml.html.HtmlElement | None) -> str:
    """The text a person reads on the page: scripts, styles and the head left out, spacing
    collapsed."""
    if doc is None:
        return ""
    copy = copy_element(doc)
    for element in copy.iter(*_INVISIBLE):
        element.drop_tree()
    for element in copy.iter(*_BLOCKS):  # "Laptop" in <h1> and "€999" in <p>: two words
        element.text = " " + (element.text or "")
        element.tail = " " + (element.tail or "")
    return " ".join(copy.text_content().split())


def parse_number(text: str) -> tuple[Decimal | None, str | None]:
    """A number or price in ``text`` and its currency, when it is short enough to be one."""
    if len(text) > MAX_NUMBER_CHARS:
        return None, None
    price = Price.fromstring(text)
    amount = price.amount
    return (None, None) if amount is None else (Decimal(amount), price.currency)


def _value(text: str | None) -> Value:
    if text is None:
        return MISSING
    text = " ".join(text.split())[:MAX_VALUE_CHARS]
    number, currency = parse_number(text)
    return Value(text=text, number=number, currency=currency)


@functools.lru_cache(maxsize=4096)
def _compiled(extract: Extract) -> etree.XPath | JSONPath:
    """The expression compiled once (ten thousand watches share a few selectors)."""
    expr = extract.expr or ""
    try:
        if extract.how is Extractor.CSS:
            parse_css(expr)
            return CSSSelector(expr)
        if extract.how is Extractor.XPATH:
            return etree.XPath(expr)
        return parse_json_path(expr)
    except (SelectorError, etree.XPathSyntaxError, JSONPathError) as exc:
        raise UsageError(f"{expr!r} is not {_LANGUAGE[extract.how]}: {exc}") from None


_LANGUAGE = {
    Extractor.CSS: "a CSS selector",
    Extractor.XPATH: "an XPath expression",
    Extractor.JSON: "a JSON path",
    Extractor.TEXT: "a selector",
}


def _html(body: str) -> lxml.html.HtmlElement | None:
    try:
        return lxml.html.document_fromstring(
            body.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8")
        )
    except etree.ParserError:  # an empty page
        return None


def _first_text(found: Any) -> str | None:
    """The text of what an XPath or CSS selector found first (None: nothing)."""
    if isinstance(found, list):
        if not found:
            return None
        found = found[0]
    if isinstance(found, bool):
        return "true" if found else "false"
    if isinstance(found, float):
        return f"{found:g}"
    if isinstance(found, str):
        return str(found)
    if isinstance(found, etree._Element):
        return " ".join(" ".join(str(t) for t in found.itertext()).split())
    return None


def _from_json(extract: Extract, body: str) -> Value:
    try:
        doc = json.loads(body)
    except ValueError:
        raise ExtractFailed("the page is not JSON, so a JSON path cannot read it") from None
    path = _compiled(extract)
    assert isinstance(path, JSONPath)
    matches = path.find(doc)
    if not matches:
        return MISSING
    found = matches[0].value
    if isinstance(found, bool) or found is None:
        return _value(json.dumps(found))
    if isinstance(found, int | float):
        return Value(text=str(found), number=Decimal(str(found)), currency=None)
    if isinstance(found, str):
        return _value(found)
    return _value(json.dumps(found, sort_keys=True))
