"""Fuzzing a real csd over CURVE with a viewer and an admin key: the hostile corpus, then
generated frames (hypothesis). After every batch csd is alive, answers `system show` with the
state it had, and its RSS is within 20 MB of the start. CI sends a few thousand frames;
`make fuzz` sends 10^5 (FUZZ_FRAMES)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from . import corpus
from .strategies import frames
from .target import FuzzTarget

FRAMES = int(os.environ.get("FUZZ_FRAMES", "3000"))
BATCH = 1000


@pytest.fixture(scope="module")
def target():
    t = FuzzTarget()
    yield t
    print(f"\nfuzz: {t.summary()}")
    t.close()


@pytest.mark.parametrize("entry", corpus.ALL, ids=lambda f: f.__name__)
def test_the_hostile_corpus(target, entry):
    entry(target)
    target.check()


def test_generated_frames(target):
    sent = [0]

    @settings(max_examples=FRAMES, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(frames())
    def one(frame):
        body = target.send(frame.key, [frame.data], frame.note)
        assert "ok" in body
        sent[0] += 1
        if sent[0] % BATCH == 0:
            target.check()

    one()
    target.check()
