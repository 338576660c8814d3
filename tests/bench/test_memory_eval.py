"""``bench/memory_eval.py``'s conversation evaluation, on a few turns: written through the
service, asked through it, judged by evidence turn (a repeat judged by the turn it repeats)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

import conversation_eval
import memory_modes
from conversation_dataset import Conversation, ConversationDataset, Question, Session, Turn
from steward.memory.retrieval import SearchMode
from steward.testing.embeddings import HashingEmbedder

START = datetime(2026, 1, 5, 10, tzinfo=UTC)


def _dataset() -> ConversationDataset:
    lines = [
        ("c1.pet", "Mei", "We adopted a beagle from the shelter, his name is Biscuit"),
        ("c1.s01.t02", "Ana", "Lovely, send photos"),
        ("c1.trip", "Ana", "Back from ten days of hiking in the Dolomites"),
        ("c1.again", "Ana", "Lovely, send photos"),
    ]
    turns = [
        Turn(key=key, speaker=who, text=text, at=START + timedelta(days=n * 30))
        for n, (key, who, text) in enumerate(lines)
    ]
    return ConversationDataset(
        seed=0,
        conversations=[
            Conversation(
                id="c1",
                owner="Ana",
                friend="Mei",
                sessions=[Session(id=f"c1.s0{n}", at=t.at, turns=[t]) for n, t in enumerate(turns)],
            )
        ],
        questions=[
            Question(
                id="c1.pet",
                conversation="c1",
                text="What breed is Biscuit?",
                evidence=(("c1.pet",),),
                answer=("beagle",),
            ),
            Question(
                id="c1.both",
                conversation="c1",
                text="Which shelter dog and which Dolomites trip?",
                evidence=(("c1.pet",), ("c1.trip",)),
                answer=("beagle", "Dolomites"),
                tags=frozenset({"multi"}),
            ),
            Question(
                id="c1.photos",
                conversation="c1",
                text="Who asked for photos?",
                evidence=(("c1.again",),),
                answer=("photos",),
            ),
            Question(
                id="c1.none",
                conversation="c1",
                text="Which restaurant?",
                evidence=(("c1.trip",),),
                answer=("Dolomites",),
                tags=frozenset({"temporal"}),
            ),
        ],
        eval_at=START + timedelta(days=200),
    )


async def test_recall_of_evidence_turns_through_the_service() -> None:
    report = await conversation_eval.evaluate(_dataset(), HashingEmbedder(), None)
    assert report["dataset"]["write_outcomes"] == {"created": 3, "duplicate": 1}
    assert report["dataset"]["evidence_turns_repeating"] == ["c1.again"]
    assert set(report["modes"]) == {"lexical", "semantic", "hybrid"}
    lexical = {q["id"]: q["recall@5"] for q in report["modes"]["lexical"]["queries"]}
    # a repeat is found as the turn it repeats; nothing shares a word with "restaurant"
    assert lexical == {"c1.pet": 1.0, "c1.both": 1.0, "c1.photos": 1.0, "c1.none": 0.0}
    assert report["modes"]["lexical"]["summary"] == {"n": 4, "recall@5": 0.75, "recall@10": 0.75}
    assert report["modes"]["lexical"]["by_tag"]["multi"]["recall@5"] == 1.0
    assert report["modes"]["lexical"]["by_tag"]["chinese"] == {
        "n": 0,
        "recall@5": None,
        "recall@10": None,
    }


def test_no_rerank_row_without_a_reranker_and_why() -> None:
    reranker, why = memory_modes.pick_reranker("none")
    assert reranker is None
    assert "not asked for" in why
    assert memory_modes.mode_arguments("hybrid", None) == {"mode": SearchMode.HYBRID}
