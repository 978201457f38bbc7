"""`dry_run` on the ops a console confirms, against a real csd: the same rules (role, arguments,
state) and messages as the real request, nothing changed, remembered or audited."""

import pytest

from csadmin import errors


def test_a_dry_run_changes_nothing_and_is_not_audited(csd):
    with csd.client() as c:
        check = c.call("system.standby", dry_run=True)
        assert (check["changed"], check["dryRun"]) == (True, True)
        assert c.system_show()["state"] == "ACTIVE" and c.events_show() == []
        with pytest.raises(errors.InvalidState) as info:
            c.call("config.execmode.setup", mode="pipelined", dry_run=True)
        assert "only be changed in STANDBY" in info.value.message
        with pytest.raises(errors.InvalidArgument):
            c.call("config.execmode.setup", mode="turbo", dry_run=True)
        assert c.call("system.activate", dry_run=True)["message"] == "System is already in ACTIVE."
        with pytest.raises(errors.NotFound):
            c.call("runs.abort", run_id="run-000042", dry_run=True)
        assert c.audit_show() == []


def test_a_dry_run_needs_the_role_of_the_real_request(csd):
    viewer = csd.add_key("viewer", "viewer")
    with csd.client(key=viewer) as c:
        with pytest.raises(errors.PermissionDenied):
            c.call("system.standby", dry_run=True)
