"""The daemon's operations, one module each; its docstring is the operation's documentation.

`COMMANDS` is a plain table from op name to module: adding an op means writing its module and
listing it here, nothing else.
"""

from . import (
    audit_show,
    config_execmode_setup,
    config_execmode_show,
    events_show,
    meta_hello,
    meta_whoami,
    run_close,
    run_heartbeat,
    run_join,
    run_leave,
    run_open,
    run_program,
    run_stream,
    runs_abort,
    runs_list,
    runs_show,
    slurm_job_begin,
    slurm_job_end,
    system_activate,
    system_date,
    system_fault_clear,
    system_fault_inject,
    system_fault_list,
    system_fault_scenario,
    system_show,
    system_standby,
)

COMMANDS = {
    m.NAME: m
    for m in (
        meta_hello,
        meta_whoami,
        system_show,
        system_date,
        system_standby,
        system_activate,
        system_fault_inject,
        system_fault_clear,
        system_fault_list,
        system_fault_scenario,
        config_execmode_show,
        config_execmode_setup,
        events_show,
        run_open,
        run_program,
        run_stream,
        run_heartbeat,
        run_close,
        run_join,
        run_leave,
        runs_list,
        runs_show,
        runs_abort,
        audit_show,
        slurm_job_begin,
        slurm_job_end,
    )
}
