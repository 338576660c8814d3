"""Words for lexical search in any language: scripts written without spaces between words
(Chinese, Japanese, Korean, Thai and their neighbours) become overlapping character bigrams.

A full-text tokenizer splits on spaces and punctuation, so an unspaced Chinese clause is one
token and none of its words can be found. Segmenting it needs a dictionary per language; the
bigrams of a run (the approach of Lucene's CJKAnalyzer) need none: every two-character word of
the run is one of them, a longer word is the run of its bigrams, and mixed text keeps its
spaced words as they are. The same function prepares what is indexed and what is asked, so
both sides agree whatever the tokenizer does with the rest.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise

_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005\u3006"  # 々 〆 (ideographic iteration and closing marks)
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_RUN = re.compile(f"[{_UNSPACED}]+")
_TERM = re.compile(f"([{_UNSPACED}]+)|[^\\W{_UNSPACED}]+")


def bigrams(run: str) -> list[str]:
    """The overlapping character pairs of a run of unspaced script (a single character as
    itself). Combining marks (Thai vowels and tones) are left out: SQLite's tokenizer takes
    them for separators, so a pair holding one would be split apart in the index."""
    chars = [c for c in run if not unicodedata.category(c).startswith("M")]
    if len(chars) < 2:
        return ["".join(chars)] if chars else []
    return [a + b for a, b in pairwise(chars)]


def index_text(text: str) -> str:
    """``text`` as a tokenizer should see it: each unspaced run replaced by its bigrams, set
    apart by spaces (``周四和Dana开会`` → ``周四 四和 Dana 开会``); the rest unchanged."""
    return _RUN.sub(lambda m: " " + " ".join(bigrams(m.group())) + " ", text)


def has_unspaced(text: str) -> bool:
    """Whether ``text`` holds a script written without spaces (``index_text`` changes it)."""
    return _RUN.search(text) is not None


def terms(text: str) -> list[str]:
    """The words of ``text`` in order, lower-cased: spaced words as they are, unspaced runs as
    their bigrams; duplicates kept."""
    found: list[str] = []
    for m in _TERM.finditer(text.lower()):
        if m.group(1):
            found.extend(bigrams(m.group(1)))
        else:
            found.append(m.group())
    return found
