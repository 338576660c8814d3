"""Telling text from binary, and in which encoding a text file is written.

A byte-order mark decides first (UTF-8, UTF-16, UTF-32); then a NUL byte means binary; then
UTF-8 is tried, strictly; then ``charset-normalizer`` guesses among the legacy encodings
(Windows-1252, Shift JIS, GB18030...) and says binary when none fits.
"""

from __future__ import annotations

import codecs

SAMPLE_BYTES = 64 * 1024
"""How much of the beginning of a file decides its encoding."""
MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE, whose mark begins it
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def encoding_of(sample: bytes) -> tuple[str, int] | None:
    """The encoding of a file beginning with ``sample``, and the length of its byte-order mark
    (0 without one); None for binary."""
    for mark, name in MARKS:
        if sample.startswith(mark):
            return name, len(mark)
    if b"\x00" in sample:
        return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return _guessed(sample)
    return "utf-8", 0


def _guessed(sample: bytes) -> tuple[str, int] | None:
    """A legacy encoding for ``sample``, or None for binary. A short text often fits several
    equally well (Windows-1250 and -1252 read "café" alike); then Windows-1252, by far the
    most common of them, is taken."""
    import charset_normalizer  # here: every command imports this module through the facade

    found = charset_normalizer.from_bytes(sample)
    best = found.best()
    if best is None:
        return None
    tied = {m.encoding for m in found if (m.chaos, m.coherence) == (best.chaos, best.coherence)}
    return ("cp1252" if "cp1252" in tied else best.encoding), 0


def decode(data: bytes, encoding: str, *, final: bool) -> tuple[str, int]:
    """``data`` as text, and how many of its bytes that is: a character cut at the end (when
    more follows) is left for the next read. Bytes that do not decode become U+FFFD."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    text = decoder.decode(data, final=final)
    pending, _ = decoder.getstate()
    return text, len(data) - len(pending)
