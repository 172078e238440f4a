"""A labelled split as one long conversation (``episodic eval``'s long conversation, the conversation
benchmark's ``--merged``): its speakers carry the same names in every part."""

from __future__ import annotations

import json

import pytest

from episodic.evals.conversations import merged


def _conversation(cid: str, speakers: list[str], date: str) -> dict:
    first, second = speakers
    return {
        "conversationId": cid,
        "speakers": speakers,
        "sessions": [
            {"sessionId": f"{cid}-s01", "date": date, "turns": [
                {"turnId": f"{cid}-t1", "speaker": first, "text": f"{second}! I got the job at Danaher's.",
                 "label": "x"},
                {"turnId": f"{cid}-t2", "speaker": second, "text": f"Well done {first}", "label": "x"},
            ]},
        ],
        "questions": [{"questionId": f"{cid}-q1", "kind": "single_hop", "question": f"Where did {first} get a job?",
                       "goldTurnIds": [f"{cid}-t1"]}],
    }  # fmt: skip


def test_given_a_split_when_merged_then_one_conversation_holds_every_session_in_date_order_renamed() -> None:
    one = _conversation("cv01", ["Dana", "Corinne"], "2025-02-09T19:30:00Z")
    two = _conversation("cv02", ["Rafael", "Aga"], "2024-09-08T18:00:00Z")
    whole = merged([one, two])
    assert whole["conversationId"] == "merged-cv01-cv02"
    assert [s["sessionId"] for s in whole["sessions"]] == ["cv02-s01", "cv01-s01"]  # by date
    turns = [t for s in whole["sessions"] for t in s["turns"]]
    assert {t["speaker"] for t in turns} == {"Ann", "Bo"}
    assert [t["text"] for t in turns[:2]] == ["Bo! I got the job at Danaher's.", "Well done Ann"]
    assert [t["speaker"] for t in turns[2:]] == ["Ann", "Bo"]  # Dana and Corinne
    assert turns[2]["text"] == "Bo! I got the job at Danaher's."  # a name inside a word is left alone
    assert [q["question"] for q in whole["questions"]] == ["Where did Ann get a job?"] * 2
    assert [q["goldTurnIds"] for q in whole["questions"]] == [["cv01-t1"], ["cv02-t1"]]


def test_given_more_speakers_than_names_when_merged_then_it_says_so() -> None:
    crowded = _conversation("cv09", ["A1", "B1"], "2025-01-01T00:00:00Z") | {"speakers": ["A", "B", "C", "D", "E"]}
    with pytest.raises(ValueError, match="more speakers"):
        merged([crowded])


def test_given_the_benchmark_asked_to_merge_too_many_speakers_then_it_stops_with_the_reason(tmp_path) -> None:
    from benchmarks.conversations import measure

    crowded = _conversation("cv09", ["A1", "B1"], "2025-01-01T00:00:00Z") | {"speakers": ["A", "B", "C", "D", "E"]}
    (tmp_path / "cv09.json").write_text(json.dumps(crowded))
    with pytest.raises(SystemExit, match="more speakers"):
        measure("test", folder=tmp_path, merge=True)
