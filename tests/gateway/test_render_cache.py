"""Remembered JSON renderings: one reply sent to many streams is rendered once, and what is
remembered stays within its bounds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from app.gateway.codec import transcoding
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.codec.transcoding import Transcoder
from gen.v1alpha import api_pb2 as rkt

PLAN: Any = SimpleNamespace(response_body="")  # all reply_json reads of a binding


def _events(count: int, tag: str = "") -> rkt.ListenEventsResponse:
    return rkt.ListenEventsResponse(
        events=[
            rkt.Event(type=rkt.EVENT_TYPE_POD_EXITED, id=f"pod-{tag}{i:04d}-" + "x" * 60)
            for i in range(count)
        ]
    )


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    renders: list[int] = []
    render = Transcoder._render

    def counted(self: Transcoder, *args: Any) -> bytes:
        renders.append(1)
        return render(self, *args)

    monkeypatch.setattr(Transcoder, "_render", counted)
    return renders


def test_an_event_of_many_pods_sent_to_a_thousand_streams_is_rendered_once(monkeypatch):
    renders = _counting(monkeypatch)
    transcoder = Transcoder(JsonOptions())
    reply = _events(60)  # one simulated step moving many pods: several KB of JSON
    assert reply.ByteSize() > 4096
    frames = {transcoder.reply_json(PLAN, reply, streamed=True) for _ in range(1000)}
    assert len(frames) == 1 and len(renders) == 1


def test_remembered_renderings_stay_within_their_byte_budget(monkeypatch):
    monkeypatch.setattr(transcoding, "_RENDER_CACHE_BYTES", 64 * 1024)
    renders = _counting(monkeypatch)
    transcoder = Transcoder(JsonOptions())
    replies = [_events(60, tag=f"{n}-") for n in range(40)]  # ~8 KB each, ~300 KB in all
    for reply in replies:
        transcoder.reply_json(PLAN, reply)
    assert transcoder._rendered_bytes <= 64 * 1024
    assert transcoder._rendered_bytes == sum(
        len(key[3]) + len(value) for key, value in transcoder._rendered.items()
    )
    transcoder.reply_json(PLAN, replies[-1])  # the newest are kept
    transcoder.reply_json(PLAN, replies[0])  # the oldest went
    assert len(renders) == len(replies) + 1
