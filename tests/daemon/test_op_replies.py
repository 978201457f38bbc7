"""Every op's reply against its spec (csadmin/shared/ops.py `reply`): one real csd asked each op once, in
the order a day of use asks them, through `call(spec, …)`; each success carries the keys its spec
says it does. So the spec's reply shape cannot drift from what csd answers."""

from __future__ import annotations

from csadmin.shared import ops
from tests.harness import wait_until

SCENARIO = 'description = "one warning"\n[[fault]]\nname = "temperature-high-warn"\nat = 3600\n'


def test_every_op_answers_the_keys_its_spec_declares(csd):
    asked = {}

    def ask(client, op, **args):
        result = client.call(op, **args)
        missing = [key for key in op.reply if key not in result]
        assert not missing, f"{op.name} lacks {missing}: {sorted(result)}"
        asked[op.name] = result
        return result

    with csd.client() as admin, csd.client(key=csd.add_key("runtime", "operator")) as runtime:
        for op in (ops.META_HELLO, ops.META_WHOAMI, ops.SYSTEM_SHOW, ops.SYSTEM_DATE, ops.SYSTEM_FAULT_LIST,
                   ops.CONFIG_EXECMODE_SHOW, ops.EVENTS_SHOW, ops.RUNS_LIST, ops.AUDIT_SHOW):
            ask(admin, op)
        ask(admin, ops.SYSTEM_FAULT_INJECT, name="temperature-high-warn", dry_run=True)
        ask(admin, ops.SYSTEM_FAULT_INJECT, name="temperature-high-warn")
        ask(admin, ops.SYSTEM_FAULT_CLEAR, all=True)
        ask(admin, ops.SYSTEM_FAULT_SCENARIO, text=SCENARIO, source="one.toml")
        ask(admin, ops.SLURM_JOB_BEGIN, job_id="42", user="alice")

        opened = ask(runtime, ops.RUN_OPEN, mode="train", owner="job-42", workers=1)
        run_id, snap = opened["runId"], admin.system_show()
        program = {"fingerprint": "sha256:spec", "target_system": snap["serial"], "execmode": snap["activeExecmode"],
                   "mode": "train", "compile_time": 1.0, "est_samples_per_sec": 1e6, "size_bytes": 0}
        ask(runtime, ops.RUN_PROGRAM, run_id=run_id, program=program)
        wait_until(lambda: admin.runs_show(run_id)["fabric"] == "PROGRAMMED", timeout=10)
        with csd.client(key=csd.add_key("feeder", "operator")) as worker:
            ask(worker, ops.RUN_JOIN, run_id=run_id, token=opened["joinToken"], name="feeder-0")
            ask(worker, ops.RUN_STREAM, run_id=run_id, samples=8)
            ask(worker, ops.RUN_LEAVE, run_id=run_id)
        ask(runtime, ops.RUN_HEARTBEAT, run_id=run_id)
        ask(runtime, ops.RUN_CLOSE, run_id=run_id)
        ask(admin, ops.RUNS_SHOW, run_id=run_id)
        second = ask(runtime, ops.RUN_OPEN, mode="eval")["runId"]
        ask(admin, ops.RUNS_ABORT, run_id=second, reason="spec check")
        ask(admin, ops.SLURM_JOB_END, job_id="42")

        ask(admin, ops.SYSTEM_STANDBY)
        admin.wait_for(state="STANDBY", timeout=10)
        ask(admin, ops.CONFIG_EXECMODE_SETUP, mode="WEIGHT_STREAMING")
        ask(admin, ops.SYSTEM_ACTIVATE)
        admin.wait_for(state="ACTIVE", timeout=10)
    assert set(asked) == {op.name for op in ops.ALL}
