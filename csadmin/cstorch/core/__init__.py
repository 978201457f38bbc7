"""csadmin.cstorch.core: the compile and the step (see docs/cstorch.md)."""
