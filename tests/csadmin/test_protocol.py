"""The wire protocol's envelope and the one error hierarchy shared by model, daemon and client."""

import json
import subprocess
import sys

import pytest

from csadmin import errors, protocol
from statemachine import errors as model_errors
from tests.harness import ROOT


def test_request_round_trip():
    rid, op, args = protocol.decode_request(protocol.request("abc", "system.show", {"detailed": True}))
    assert (rid, op, args) == ("abc", "system.show", {"detailed": True})


def test_missing_args_means_empty():
    assert protocol.decode_request(b'{"v":1,"id":7,"op":"system.show"}') == (7, "system.show", {})


@pytest.mark.parametrize("frame", [b"", b"null", b'{"v":1,"id":true,"op":"x"}', b'{"v":1,"id":"","op":"x"}'])
def test_malformed_envelopes_are_bad_requests(frame):
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode_request(frame)
    assert info.value.code == "BAD_REQUEST"


def test_every_wire_code_has_a_client_exception_and_no_more():
    assert set(errors.BY_CODE) == protocol.ERROR_CODES


def test_model_refusal_codes_are_wire_codes():
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    for cls in [model_errors.Refused, *subclasses(model_errors.Refused)]:
        assert cls.code in protocol.ERROR_CODES, cls


def test_exit_codes_are_distinct_per_class_and_never_zero():
    codes = {
        "usage": errors.EXIT_USAGE, "state": errors.EXIT_STATE, "busy": errors.EXIT_BUSY,
        "permission": errors.EXIT_PERMISSION, "not found": errors.EXIT_NOT_FOUND,
        "unreachable": errors.EXIT_UNREACHABLE, "internal": errors.EXIT_INTERNAL,
    }
    assert len(set(codes.values())) == len(codes) and 0 not in codes.values()
    assert all(cls.exit_code != 0 for cls in errors.BY_CODE.values())


def test_error_reply_never_carries_unknown_codes():
    with pytest.raises(AssertionError):
        protocol.error("x", "SOMETHING_NEW", "no")
    reply = json.loads(protocol.error("x", "BUSY", "held", "wait"))
    assert reply == {"v": 1, "id": "x", "ok": False, "error": {"code": "BUSY", "message": "held", "hint": "wait"}}


@pytest.mark.parametrize("module", ["csadmin.client", "csadmin.cli.main"])
def test_client_and_one_shot_paths_stay_light(module):
    """DESIGN §6: the client and one-shot paths import neither prompt_toolkit, structlog nor transitions."""
    code = f"import sys, {module}; print(sorted({{m.split('.')[0] for m in sys.modules}} & {{'prompt_toolkit', 'structlog', 'transitions'}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
