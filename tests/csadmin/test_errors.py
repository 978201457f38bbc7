"""The one error hierarchy shared by model, daemon and client (csadmin/errors.py): a code and an exit
code per class, the closed set that may go on the wire, and each class decoded back as itself."""

import json

import pytest

from csadmin import errors
from csadmin.shared import protocol
from csadmin.statemachine.run_rules import OPEN_RULES, RUN_RULES, Refuse


def test_each_error_class_has_its_own_upper_snake_code():
    classes = errors.CsError.__subclasses__()
    codes = [cls.code for cls in classes]
    assert len(set(codes)) == len(codes) and all(code.isupper() and " " not in code for code in codes)
    assert set(errors.WIRE_CODES) == {cls.code for cls in classes if cls.on_wire}
    assert {"UNREACHABLE", "NO_CREDENTIALS", "USAGE", "CANCELLED"}.isdisjoint(errors.WIRE_CODES)


@pytest.mark.parametrize("code", sorted(errors.WIRE_CODES))
def test_a_wire_code_decodes_to_the_class_that_encoded_it(code):
    cls = errors.BY_CODE[code]
    reply = json.loads(protocol.error("x", cls("what happened", "what to do")))
    decoded = errors.from_wire(reply["error"])
    assert type(decoded) is cls and (decoded.message, decoded.hint) == ("what happened", "what to do")


def test_an_unknown_code_from_a_newer_csd_decodes_as_internal():
    assert type(errors.from_wire({"code": "SOMETHING_NEW", "message": "m"})) is errors.Internal


def test_the_models_refusals_are_errors_csd_may_answer_with():
    refusals = {rule.error for rule in (*RUN_RULES.values(), *OPEN_RULES.values()) if isinstance(rule, Refuse)}
    assert refusals and all(cls.on_wire for cls in refusals)


def test_a_default_hint_applies_unless_the_raiser_names_one():
    assert errors.Internal("boom").hint.startswith("This is a bug")
    assert errors.Internal("boom", "do this").hint == "do this"
    assert errors.Busy("held").hint == ""


def test_exit_codes_are_distinct_per_class_and_never_zero():
    codes = {
        "usage": errors.EXIT_USAGE, "state": errors.EXIT_STATE, "busy": errors.EXIT_BUSY,
        "permission": errors.EXIT_PERMISSION, "not found": errors.EXIT_NOT_FOUND,
        "unreachable": errors.EXIT_UNREACHABLE, "internal": errors.EXIT_INTERNAL,
    }
    assert len(set(codes.values())) == len(codes) and 0 not in codes.values()
    assert all(cls.exit_code != 0 for cls in errors.BY_CODE.values())


def test_an_error_a_fault_caused_names_it_on_the_wire_and_in_the_client():
    for cls in (errors.RunAborted, errors.FaultActive, errors.TransitionFailed):
        reply = json.loads(protocol.error("r1", cls("it broke", fault="psu-hardware-error")))
        assert reply["error"]["fault"] == "psu-hardware-error"
        again = errors.from_wire(reply["error"])
        assert type(again) is cls and again.fault == "psu-hardware-error" and again.exit_code == errors.EXIT_STATE
    plain = json.loads(protocol.error("r2", errors.RunAborted("lease expired")))
    assert "fault" not in plain["error"] and errors.from_wire(plain["error"]).fault is None
