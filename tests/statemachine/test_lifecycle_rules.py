"""The lifecycle declared once (statemachine/lifecycle_rules.py): the machine's transitions and
every request's rule are derived from one table, and every state has a health and a rule."""

from transitions import Machine

from csadmin.shared.states import Health, Lifecycle
from csadmin.statemachine.lifecycle_rules import HEALTH, LIFECYCLE_TRANSITIONS, REQUEST_RULES, REQUESTS
from csadmin.statemachine.rules import GO


def test_every_state_has_a_health_and_every_request_a_rule_in_it():
    assert set(HEALTH) == set(Lifecycle) and all(isinstance(h, Health) for h in HEALTH.values())
    for name, request in REQUESTS.items():
        assert set(request.elsewhere) == set(Lifecycle) - {request.source}, name
        assert {state for state in Lifecycle if REQUEST_RULES[(name, state)] is GO} == {request.source}


def test_a_request_allowed_in_its_source_fires_its_transition_there_and_only_there():
    for name, request in REQUESTS.items():
        if request.trigger is None:
            continue
        for state in Lifecycle:
            model = type("Model", (), {})()
            Machine(model=model, states=[s.value for s in Lifecycle], transitions=LIFECYCLE_TRANSITIONS,
                    initial=state.value, auto_transitions=False, ignore_invalid_triggers=True)
            fired = getattr(model, request.trigger)()
            assert fired is (state is request.source), (name, state)
            assert model.state == (request.dest if fired else state).value
