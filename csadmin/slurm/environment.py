"""What Slurm tells a hook about its job and node, read as the untrusted bytes it is.

A job's user and name, and so what slurmd puts in its scripts' environment, are not ours to
trust: a value that is not UTF-8 text once made `cs slurm prolog` end in a traceback. So the
hooks read SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_CONSTRAINTS and SLURMD_NODENAME (and the
`--job-id`, `--user`, `--constraint`, `--node` that stand in for them) through `value()`, which
takes the raw bytes (os.environb; an argument's bytes as the OS gave them) and refuses, with
`HostileEnvironment` (a usage error: exit 2), one that
- is longer than LIMITS says (bytes): far beyond any real id, user, node name or constraint;
- is not valid UTF-8;
- holds a control character (a newline would split the drain reason scontrol records).
The message names the variable and what is wrong, never the value itself. What is accepted only
ever reaches other programs as one argv item (scontrol, csd's wire), never a shell.
"""

from __future__ import annotations

import os
import re

from .. import errors

LIMITS = {  # bytes
    "SLURM_JOB_ID": 64,  # a number, or an array job's `1234_7`
    "SLURM_JOB_USER": 256,  # a login name (Linux allows 32)
    "SLURMD_NODENAME": 256,  # a host name (at most 64, one label of a FQDN)
    "SLURM_JOB_CONSTRAINTS": 1024,  # `cs2_pipelined|cs2_weight_streaming` and the like
}
OPTIONS = {"job_id": "SLURM_JOB_ID", "user": "SLURM_JOB_USER", "node": "SLURMD_NODENAME",
           "constraint": "SLURM_JOB_CONSTRAINTS"}  # the option that stands in for each
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class HostileEnvironment(errors.UsageError):
    """A value from Slurm (or its stand-in option) the hook refuses to use."""

    hint = ("Slurm's environment cannot be trusted: look at slurmd's configuration and, for a job, at how "
            "it was submitted (its user, name and constraint); then resume the node.")


def value(options: dict, option: str) -> str | None:
    """The option `option` if given, else its Slurm variable (None if neither is set), checked."""
    variable = OPTIONS[option]
    given = options.get(option)
    if given is not None:
        # argv came in as surrogate-escaped text: back to the bytes the OS gave us.
        raw = os.fsencode(given)
        what = f"--{option.replace('_', '-')}"
    else:
        raw = os.environb.get(variable.encode())
        if raw is None:
            return None
        what = variable
    return checked(what, raw, LIMITS[variable])


def checked(what: str, raw: bytes, limit: int) -> str:
    """`raw` as text, or HostileEnvironment saying why `what` cannot be used."""
    if len(raw) > limit:
        raise HostileEnvironment(f"{what} is {len(raw):,} bytes long, over the {limit:,} bytes a hook accepts.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HostileEnvironment(f"{what} is not valid UTF-8 (byte {exc.start + 1} of {len(raw)}).") from None
    control = _CONTROL.search(text)
    if control is not None:
        raise HostileEnvironment(f"{what} holds a control character (U+{ord(control.group()):04X}) "
                                 f"at character {control.start() + 1}.")
    return text
