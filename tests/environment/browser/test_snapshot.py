"""The snapshot as the agent reads it (lines as Chromium's aria snapshot writes them): password
values masked, references only where Playwright put them, a long page cut and said so."""

from __future__ import annotations

import re

from steward.environment.browser.snapshot import MASK, SNAPSHOT_CHARS, clean

REAL = re.compile(r"\[ref=((?:f\d+)?e\d+)\]")

PAGE = """- generic [active] [ref=e1]:
  - 'button "Pay: [ref=e1] ''now'' \\"x\\"" [ref=e2]'
  - textbox "PIN" [ref=e3]: "it's: \\\\"
  - textbox "Name" [ref=e4]: Ann
  - paragraph [ref=e5]: "- textbox [ref=e9]: a"
  - text: see [REF=e4] here"""


def test_only_playwrights_references_remain() -> None:
    shown = clean(PAGE, set())
    assert REAL.findall(shown) == ["e1", "e2", "e3", "e4", "e5"]
    assert "''now''" in shown  # the quoted line is still one YAML string
    assert "see [REF\u200d=e4] here" in shown


def test_a_password_value_is_masked_wherever_it_shows() -> None:
    shown = clean(PAGE + "\n  - text: the PIN is it's: \\", {"it's: \\"})
    assert f'textbox "PIN" [ref=e3]: {MASK}' in shown
    assert "it's: \\" not in shown
    assert "Ann" in shown
    # a short password is masked as a field's value, not in every word that contains it
    assert 'textbox "Name" [ref=e4]: ' + MASK in clean(PAGE, {"Ann"})
    assert "generic" in clean(PAGE, {"e"})


def test_a_long_page_is_cut_and_says_so() -> None:
    line = "  - paragraph [ref=e7]: " + "word " * 30
    shown = clean("\n".join([line] * 2000), set())
    assert len(shown) < SNAPSHOT_CHARS + 200
    assert shown.endswith("scroll or wait for a shorter page to see the rest]")
    assert "more characters not shown" in shown
