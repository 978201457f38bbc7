"""The system's vocabulary (csadmin/shared/states.py), defined once for the model, csd and the console."""

import pytest

from csadmin.slurm.features import FEATURE_MODES
from csadmin.shared.states import EXECMODE_SPELLINGS, SETTLES_TO, ExecMode, Lifecycle, settles_to, title


@pytest.mark.parametrize("spelling", EXECMODE_SPELLINGS)
def test_every_mode_spelling_the_console_offers_parses(spelling):
    assert ExecMode.parse(spelling) in ExecMode


def test_the_console_offers_each_mode_as_written_and_as_typed():
    assert EXECMODE_SPELLINGS == ("PIPELINED", "WEIGHT_STREAMING", "pipelined", "weight-streaming")
    assert [m.title for m in ExecMode] == ["Pipelined", "Weight Streaming"] == [title(m.value) for m in ExecMode]


def test_settles_to_reads_wire_strings_by_the_models_table():
    for state in Lifecycle:
        expected = SETTLES_TO.get(state)
        assert settles_to(state.value) == (expected.value if expected else None)
    assert settles_to("SOMETHING_NEWER") is None


def test_slurm_has_one_feature_per_mode():
    assert FEATURE_MODES == {"cs2_pipelined": "PIPELINED", "cs2_weight_streaming": "WEIGHT_STREAMING"}
