"""The conversation dataset of ``bench/memory_eval.py``: the same for a seed, the size it says,
and every question's evidence there and answering it."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

from conversation_dataset import ConversationDataset, generate


@pytest.fixture(scope="module")
def data() -> ConversationDataset:
    return generate(7)


def test_the_same_for_a_seed_and_not_for_another() -> None:
    first, again = generate(3, conversations=2), generate(3, conversations=2)
    other = generate(4, conversations=2)
    assert first == again
    assert [t.content for _, t in first.turns()] != [t.content for _, t in other.turns()]
    assert [q.text for q in first.questions] != [q.text for q in other.questions]


def test_long_conversations_over_months(data: ConversationDataset) -> None:
    assert len(data.conversations) == 5
    for conversation in data.conversations:
        assert 25 <= len(conversation.sessions) <= 32
        span = conversation.sessions[-1].at - conversation.sessions[0].at
        assert span.days >= 240
        times = [t.at for s in conversation.sessions for t in s.turns]
        assert times == sorted(times)
        for session in conversation.sessions:
            assert 15 <= len(session.turns) <= 40
            assert {t.speaker for t in session.turns} == {conversation.owner, conversation.friend}
    turns = [t for _, t in data.turns()]
    assert len(turns) >= 3000
    assert len({t.key for t in turns}) == len(turns)
    chinese = [t for t in turns if any("\u4e00" <= ch <= "\u9fff" for ch in t.text)]
    assert 0.05 < len(chinese) / len(turns) < 0.4
    assert all(t.at < data.eval_at for t in turns)


def test_questions_of_every_kind(data: ConversationDataset) -> None:
    assert len(data.questions) >= 200
    assert len({q.id for q in data.questions}) == len(data.questions)
    for tag in ("multi", "temporal", "chinese"):
        assert sum(tag in q.tags for q in data.questions) >= 25, tag
    assert any(len(q.evidence) > 1 for q in data.questions if "multi" in q.tags)
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in q.text) for q in data.questions) >= 25


def test_evidence_exists_and_answers(data: ConversationDataset) -> None:
    turns = data.by_key()
    for question in data.questions:
        assert question.evidence, question.id
        keys = [key for item in question.evidence for key in item]
        assert all(key in turns for key in keys), question.id
        assert all(key.startswith(f"{question.conversation}.") for key in keys), question.id
        said = " ".join(turns[key].text for key in keys).lower()
        for word in question.answer:
            assert word.lower() in said, (question.id, word, said)
        if question.answer_month is not None:
            months = {f"{turns[key].at:%B %Y}" for key in keys}
            assert question.answer_month in months, question.id
        assert question.answer or question.answer_month, question.id


def test_paraphrased_not_copied(data: ConversationDataset) -> None:
    """Questions ask in other words: most share at most two content words with the evidence."""
    turns = data.by_key()
    stop = {"the", "a", "of", "to", "in", "did", "does", "what", "which", "who", "is", "and"}
    close = 0
    for question in data.questions:
        asked = {w.strip("?,'s").lower() for w in question.text.split()} - stop
        said = {
            w.strip("!?,.'s").lower()
            for item in question.evidence
            for key in item
            for w in turns[key].content.split()
        }
        close += len(asked & said) > 3
    assert close / len(data.questions) < 0.1


def test_events_in_the_order_the_questions_assume(data: ConversationDataset) -> None:
    turns = data.by_key()
    for conversation in data.conversations:

        def at(fact: str, c: str = conversation.id) -> datetime:
            return turns[f"{c}.{fact}"].at

        # the employer at the wedding and at the move is the first one; the city at the
        # adoption is the first one; a book is read after its recommendation
        for before, after in (
            ("sister_intro", "wedding"),
            ("job1", "wedding"),
            ("wedding", "job2"),
            ("city1_life", "move"),
            ("pet", "move"),
            ("move", "job2"),
            ("move", "flat"),
            ("move", "visit"),
            ("pet", "pet2"),
            ("book_rec", "book_read"),
            ("hobby1", "hobby2"),
            ("wedding", "baby"),
        ):
            assert at(before) < at(after), (conversation.id, before, after)
