"""`cerebras.pytorch` in a process that a script under `python -m csadmin.cstorch` started (the
runner puts this folder on its PYTHONPATH): the process is prepared as the runner's is, and the
registered module takes this one's place."""

from csadmin.cstorch.__main__ import stand_in

stand_in(__name__)
