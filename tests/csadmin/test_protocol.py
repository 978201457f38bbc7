"""The wire protocol's envelope (csadmin/shared/protocol.py): requests, replies and the decoder that cannot
be crashed. The error hierarchy it carries: tests/csadmin/test_errors.py."""

import json
import subprocess
import sys

import pytest

from csadmin import errors
from csadmin.shared import protocol
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
    assert isinstance(info.value.error, errors.BadRequest)


def test_error_reply_never_carries_a_code_outside_the_closed_set():
    with pytest.raises(ValueError):
        protocol.error("x", errors.Unreachable("no"))
    reply = json.loads(protocol.error("x", errors.Busy("held", "wait")))
    assert reply == {"v": 1, "id": "x", "ok": False, "error": {"code": "BUSY", "message": "held", "hint": "wait"}}


def test_the_closed_set_holds_under_python_dash_O_too():
    """A check, not an assert: `python -O` must not let a client-side code onto the wire."""
    code = "from csadmin import errors; from csadmin.shared import protocol; protocol.error('x', errors.UsageError('no'))"
    done = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "ValueError" in done.stderr, done


@pytest.mark.parametrize("module", ["csadmin.client", "csadmin.main"])
def test_client_and_one_shot_paths_stay_light(module):
    """docs/design.md, "Layers": the client and one-shot paths import neither prompt_toolkit, structlog nor
    transitions."""
    code = f"import sys, {module}; print(sorted({{m.split('.')[0] for m in sys.modules}} & {{'prompt_toolkit', 'structlog', 'transitions'}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


# -- the decoder cannot be crashed (issue 10) -----------------------------------------------------


def _bad(frame: bytes) -> protocol.ProtocolError:
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode_request(frame)
    assert isinstance(info.value.error, errors.BadRequest)
    return info.value


@pytest.mark.parametrize("depth", [protocol.MAX_NESTING + 1, 500, 999, 1000, 30_000])
def test_deep_nesting_is_refused_before_parsing(depth):
    """`[` * 1000 crashed json.loads (RecursionError); 999 parsed but crashed what came after."""
    exc = _bad(b"[" * depth + b"]" * depth)
    assert "nested" in exc.error.message
    nested_args = b'{"v":1,"id":"d","op":"system.show","args":{"x":' + b"[" * depth + b"]" * depth + b"}}"
    exc = _bad(nested_args)
    assert exc.request_id is None, "nothing from a refused frame is echoed"


def test_nesting_inside_strings_does_not_count():
    frame = protocol.encode({"v": 1, "id": "s", "op": "system.show", "args": {"x": "[" * 5000 + '\\"{'}})
    assert protocol.decode_request(frame) == ("s", "system.show", {"x": "[" * 5000 + '\\"{'})


def test_legitimate_nesting_passes():
    program = {"fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
               "compile_time": 1.0, "est_samples_per_sec": 10.0, "size_bytes": 1}
    frame = protocol.request("p", "run.program", {"run_id": "run-000001", "program": program})
    assert protocol.decode_request(frame)[2]["program"] == program


@pytest.mark.parametrize(
    "frame",
    [
        b'{"v":1,"id":"\\ud800","op":"system.show","args":{}}',  # a lone surrogate as a JSON escape
        b'{"v":1,"id":"\xed\xa0\x80","op":"system.show","args":{}}',  # ... and as raw bytes ED A0 80
        b'{"v":1,"id":"ok","op":"system.\\udfff","args":{}}',
        b'{"v":1,"id":"ok","op":"system.show","args":{"\\ud800":1}}',
        b'{"v":1,"id":"ok","op":"run.open","args":{"mode":"train","owner":"a\\udbffb"}}',
        b'{"v":1,"id":"ok","op":"run.open","args":{"mode":"train","owner":"a\xed\xbf\xbfb"}}',
        b'{"v":1,"id":"ok","op":"x","args":{"l":[["\\ud834"]]}}',
    ],
)
def test_lone_surrogates_are_refused_anywhere(frame):
    exc = _bad(frame)
    assert "UTF-8" in exc.error.message or "surrogate" in exc.error.message
    # The refusal itself must be encodable: this is what crashed csd.
    reply = protocol.error(exc.request_id, exc.error)
    assert json.loads(reply)["error"]["code"] == "BAD_REQUEST"


def test_surrogate_pairs_are_text_and_pass():
    frame = b'{"v":1,"id":"e","op":"run.open","args":{"mode":"train","owner":"\\ud83d\\ude00"}}'
    assert protocol.decode_request(frame)[2]["owner"] == "\U0001F600"


def test_id_is_echoed_when_it_is_clean_and_only_then():
    exc = _bad(b'{"v":1,"id":"clean","op":"system.show","args":{"x":"\\ud800"}}')
    assert exc.request_id == "clean"
    assert _bad(b'{"v":1,"id":"\\ud800x","op":"system.show","args":{}}').request_id is None


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_number_constants_are_refused(constant):
    _bad(b'{"v":1,"id":"n","op":"events.show","args":{"max_count":' + constant + b"}}")


@pytest.mark.parametrize("request_id", [2**63, -(2**63) - 1, 10**100, "x" * (protocol.MAX_ID_CHARS + 1)])
def test_ids_are_bounded(request_id):
    _bad(json.dumps({"v": 1, "id": request_id, "op": "system.show", "args": {}}).encode())


@pytest.mark.parametrize("request_id", [2**63 - 1, -(2**63), 0, "x" * protocol.MAX_ID_CHARS])
def test_ids_at_the_bounds_pass(request_id):
    frame = json.dumps({"v": 1, "id": request_id, "op": "system.show", "args": {}}).encode()
    assert protocol.decode_request(frame)[0] == request_id


def test_integer_and_string_ids_never_share_a_key():
    assert protocol.id_key(7) != protocol.id_key("7")
    assert protocol.id_key("7") == protocol.id_key("7")


def test_oversize_message_is_refused_even_without_libzmq():
    _bad(b" " * (protocol.MAX_FRAME_BYTES + 1))
