"""The seeds' launchers: `csrun_cpu` (validate or compile on a CPU node), `csrun_wse` (train on
the cluster with input workers) and `cs_input_analyzer` (size the input pipeline).

They run a cstorch script in its own process (`python -m csadmin.cstorch SCRIPT …`) and tell it
what to do through its environment: the system (`CS_CONNECT`, `CS_KEY`, `CS_SERVER_KEY`), the
mode (`CSTORCH_MODE`, read by cstorch.configure) and where to describe its compile
(`CSTORCH_COMPILE_RECORD`). They never import torch themselves. docs/cstorch.md, "The launchers".
"""
