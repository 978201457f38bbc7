"""The Slurm integration (docs/slurm.md): the `cs slurm …` hooks Slurm's scripts run on a node
with a CS-2 attached, so that jobs can ask for the wafer and its execution mode and the node is
drained while the system cannot take them.

    hooks.py     the six hooks: health-check, features, set-feature, reboot, prolog, epilog
    health.py    the health check's judgement and what it does to the node (pure)
    features.py  Slurm features <-> execution modes, and a job's constraint (pure)
    scontrol.py  what the hooks ask of Slurm (scontrol, with its own PATH)
    slurmd.py    restarting slurmd as rebooted, once the reboot program activated the system
    report.py    messages for people: stderr, syslog, and $CS_SLURM_LOG

Loaded only by `cs slurm …`, never on the one-shot or client paths.
"""
