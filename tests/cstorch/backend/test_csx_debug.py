"""cstorch.backends.csx.debug's debug_args and ini: the appliance's DebugArgs and its INI view, as
ModelZoo 2.10's callbacks use them (DebugArgsPath merges a file's; the NaN checker sets, reads and
deletes INI flags by attribute)."""

import pytest

from csadmin.appliance.utils.debug_args import DebugArgs, get_debug_args, write_debug_args
from csadmin.appliance.utils.ini import INI, set_ini
from csadmin.cstorch.backend.csx_settings import CsxSettings
from csadmin.errors import InvalidArgument


def test_debug_args_is_a_fresh_debug_args_that_a_file_merges_into(tmp_path):
    csx = CsxSettings()
    assert isinstance(csx.debug.debug_args, DebugArgs) and csx.debug.debug_args.settings() == {}
    assert CsxSettings().debug.debug_args is not csx.debug.debug_args  # no state shared across backends
    theirs = DebugArgs()
    set_ini(theirs, ws_opt_x=True, ws_level=3)
    write_debug_args(theirs, tmp_path / "debug.txt")
    csx.debug.debug_args.MergeFrom(get_debug_args(str(tmp_path / "debug.txt")))
    assert csx.debug.ini.ws_opt_x is True and csx.debug.ini.ws_level == 3
    assert csx.settings()["debug"] == {"debug_args": {"bools": {"ws_opt_x": True}, "ints": {"ws_level": 3}}}


def test_the_nan_checker_sets_reads_and_deletes_ini_flags_by_attribute():
    csx = CsxSettings()
    missing = object()
    assert getattr(csx.debug.ini, "ws_rt_skip_bwd_pass_nancheck", missing) is missing
    setattr(csx.debug.ini, "ws_rt_skip_bwd_pass_nancheck", True)
    assert csx.debug.debug_args.ini.bools == {"ws_rt_skip_bwd_pass_nancheck": True}
    csx.debug.ini.ws_rt_skip_bwd_pass_nancheck = 2  # another type moves it to that type's map
    assert csx.debug.debug_args.settings() == {"ints": {"ws_rt_skip_bwd_pass_nancheck": 2}}
    delattr(csx.debug.ini, "ws_rt_skip_bwd_pass_nancheck")
    assert csx.debug.debug_args.settings() == {} and csx.settings() == {"precision": {"optimization_level": 1},
                                                                        "performance": {"micro_batch_size": "auto"}}
    with pytest.raises(AttributeError):
        del csx.debug.ini.never_set


def test_setting_debug_args_or_ini_replaces_the_options_and_bad_values_are_refused():
    csx = CsxSettings()
    csx.debug.debug_args = {"ini": {"bools": {"a": True}}}
    assert dict(csx.debug.ini) == {"a": True}
    csx.debug.ini = INI(b=1.5)
    assert dict(csx.debug.ini) == {"b": 1.5} and csx.debug.debug_args.ini.floats == {"b": 1.5}
    csx.debug.ini = {"c": "s"}
    assert dict(csx.debug.ini) == {"c": "s"}
    for bad in ("debug_args", "ini"):
        with pytest.raises(InvalidArgument, match=f"csx.debug.{bad} must be"):
            setattr(csx.debug, bad, 7)
    with pytest.raises(InvalidArgument, match="an INI option is a bool, int, float or str"):
        csx.debug.ini.x = [1]
    with pytest.raises(InvalidArgument, match="only the INI options are"):
        csx.debug.debug_args = {"debug_usr": {"x": 1}}
