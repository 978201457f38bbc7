"""csadmin: the CS-2 control plane (docs/design.md).

    client.py     the Python client runtimes and scripts import (`from csadmin.client import Client`)
    errors.py     every error, once: its wire code, exit code and hints (runtimes catch these)
    main.py       `cs`: one-shot, script or the interactive shell
    shared/       the shared leaves every layer may import: vocabulary, wire, ops, key files
    clientlib/    what the client stands on: transport, credentials, following events, runs, inventory
    cli/          the console: the command table, parsing, actions, rendering (one-shot and scripts)
    shell/        the interactive `cs>` shell on the same actions
    fleet/        several systems at once, above the client and below the console
    slurm/        the hooks Slurm's scripts run (`cs slurm ...`)
    launch/       the launchers: csrun_cpu, csrun_wse, cs_input_analyzer
    cstorch/      the PyTorch runtime (an optional extra)
    daemon/       csd (the repository's daemon/ folder: "One install name" in docs/design.md)
    statemachine/ the device model (the repository's statemachine/ folder)

Kept light on purpose: importing `csadmin` or `csadmin.client` loads neither prompt_toolkit,
structlog nor transitions (docs/design.md, "Layers").
"""

__version__ = "0.1.0"
