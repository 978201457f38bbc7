"""csadmin.cstorch: the Cerebras PyTorch API (cstorch) run for real on the CPU against csd.

    import csadmin.cstorch as cstorch

Needs the optional extra `csadmin[cstorch]` (torch, h5py); `cs`, `csd` and `csadmin.client` never
import it. docs/cstorch.md lists every name of the API with its status here.
"""
