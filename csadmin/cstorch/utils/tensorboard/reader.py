"""`cstorch.utils.tensorboard.SummaryReader`: a run's summaries read back — scalars and text with
TensorBoard's own reader, tensor summaries from the writer's tensor directories.

    reader = cstorch.utils.tensorboard.SummaryReader("out/train")     # or a list of directories
    reader.read_scalar("loss")                 # [ScalarEvent(wall_time, step, value), ...]
    reader.read_scalar("loss", step=3)         # the one at step 3
    reader.read_tensor("logits", step=3)       # TensorDescriptor(step, ns_since_epoch, tensor)
    reader.read_tensor("logits")               # {step: TensorDescriptor} for every step
    reader.scalar_names(), reader.tensor_names(), reader.Tags()

Every event file under the directories given (`events.out.tfevents.*`, searched recursively) is
one TensorBoard run of an EventMultiplexer, named by its directory relative to what they share;
every tensor directory (`events.out.csevents.*`, writer.py) whose `__metadata__` says version 1.1
is searched for tensors (another version is skipped with a warning; one without metadata
refused). `filter="train"` keeps only names under groups that begin with it (`train*/name`).
A tensor written several times at one step comes back as the latest (`latest_only=True`, with a
warning) or as all of them, oldest first. Refused: directories with no event file, a scalar
name that was never written (the valid ones listed), a step it was not written at; a tensor
never summarized is None, with a warning.
"""

from __future__ import annotations

import fnmatch
import json
import os
import warnings
from collections import defaultdict
from pathlib import Path

import torch
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
from tensorboard.backend.event_processing.tag_types import SCALARS, TENSORS

from csadmin.errors import NotFound

from .writer import CSEVENTS, METADATA, TFEVENTS, VERSION, VERSION_KEY, TensorDescriptor


class SummaryReader:
    """The summaries under `log_dirs` (see the module docstring); `kwargs` go to TensorBoard's
    EventMultiplexer (`size_guidance`, …)."""

    def __init__(self, log_dirs, filter: str | None = None, **kwargs):
        self.filter = filter
        if not isinstance(log_dirs, (list, tuple, set)):
            log_dirs = [log_dirs]
        roots = [Path(d) for d in log_dirs]
        found = {p.parent.resolve() for root in roots
                 for p in (root.rglob(TFEVENTS + "*") if root.is_dir() else [root])}
        if not found:
            raise NotFound(f"No event files found under {[str(d) for d in log_dirs]}.",
                           hint="Give the SummaryWriter's log_dir (its events.out.tfevents.* file is there).")
        common = os.path.commonpath([str(p) for p in found])
        self.event_file_dirs = {str(p.relative_to(common)): str(p) for p in found}
        self.cs_summary_dirs = [d for root in roots for d in _tensor_roots(root) if _readable(d)]
        self.summary_dirs = [d / "tensors" for d in self.cs_summary_dirs if (d / "tensors").exists()]
        self.accumulator = None
        self.accumulator_params = kwargs

    # -- TensorBoard's events: scalars, text --------------------------------------------------

    def reload(self) -> None:
        """Read the event files again (what was written since is seen)."""
        if self.accumulator is None:
            self.accumulator = EventMultiplexer(self.event_file_dirs, **self.accumulator_params)
        self.accumulator.Reload()

    def read_scalar(self, name: str, step: int | None = None):
        """The scalar `name`'s events (ScalarEvent: wall_time, step, value), or its one at `step`."""
        tags = self._tag_names(SCALARS, name)
        if not any(tags.values()):
            raise NotFound(f"Could not find scalar {name}. Valid scalar names:\n{sorted(self.scalar_names())}",
                           hint="Read one of the names listed (the name given to summarize_scalar / add_scalar).")
        events = [e for run, names in tags.items() for tag in names for e in self.accumulator.Scalars(run, tag)]
        if step is None:
            return events
        for event in events:
            if event.step == step:
                return event
        raise NotFound(f"Could not find scalar {name} at step {step}.",
                       hint=f"It was written at steps {sorted({e.step for e in events})}.")

    def Scalars(self, name: str):
        """`read_scalar(name)`, under TensorBoard's accumulator's name."""
        return self.read_scalar(name)

    def scalar_names(self) -> set:
        return {tag for names in self._tag_names(SCALARS, "*").values() for tag in names}

    def scalar_groups(self) -> set:
        """The scalar names' first components ("train" of "train/loss")."""
        return {name.partition("/")[0] for name in self.scalar_names()}

    def text_summary_names(self) -> set:
        return {tag for names in self._tag_names(TENSORS, "*text_summary").values() for tag in names}

    def read_text_summary(self, name: str, step: int | None = None):
        """The text summary `name`'s events (add_text's: TensorEvent), or its one at `step`."""
        if not name.endswith("/text_summary"):
            name = f"{name}/text_summary"
        tags = self._tag_names(TENSORS, name)
        if not any(tags.values()):
            raise NotFound(f"Could not find text summary {name}. Valid text summary names: "
                           f"{', '.join(sorted(self.text_summary_names()))}")
        events = [e for run, names in tags.items() for tag in names for e in self.accumulator.Tensors(run, tag)]
        if step is None:
            return events
        for event in events:
            if event.step == step:
                return event
        raise NotFound(f"Could not find text_summary {name} at step {step}.")

    def Tags(self) -> dict:
        """Every tag type's names, over all the runs."""
        self.reload()
        tags: dict = {}
        for run_tags in self.accumulator.Runs().values():
            for kind, names in run_tags.items():
                if names:
                    tags.setdefault(kind, []).extend(names)
        return tags

    def _tag_names(self, kind: str, name: str) -> dict:
        """run → the tags of `kind` matching `name` (a glob), under the filter."""
        self.reload()
        pattern = os.path.join(f"{self.filter}*", name) if self.filter else name
        return {run: fnmatch.filter(tags.get(kind, []), pattern) for run, tags in self.accumulator.Runs().items()}

    # -- tensor summaries -----------------------------------------------------------------------

    def read_tensor(self, name: str, step: int | None = None, latest_only: bool = True):
        """The tensor summary `name` at `step` (a TensorDescriptor; with latest_only=False the
        list written there), or at every step ({step: …}); None if it was never written."""
        pattern = os.path.join(f"{self.filter}*", name) if self.filter else name
        pattern = os.path.join(pattern, f"{step}.*" if step is not None else "*")
        by_step = defaultdict(list)
        for directory in self.summary_dirs:
            for path in directory.glob(pattern):
                if path.is_file():
                    descriptor = TensorDescriptor.from_dict(torch.load(str(path)))
                    by_step[descriptor.step].append(descriptor)
        if not by_step:
            warnings.warn(f"No tensor with name {name} has been summarized"
                          + (f" at step {step}" if step is not None else ""), stacklevel=2)
            return None

        def pick(at: int, found: list):
            found = sorted(found, key=lambda d: d.ns_since_epoch)
            if not latest_only:
                return found
            if len(found) > 1:
                warnings.warn(f"Multiple summarized tensors with name {name} found at step {at}: returning the "
                              f"latest one.", stacklevel=3)
            return found[-1]

        if step is not None:
            return pick(step, by_step[step])
        return {at: pick(at, found) for at, found in sorted(by_step.items())}

    def tensor_names(self) -> set:
        """The names tensors were summarized under ("a/b" for a nested name)."""
        pattern = os.path.join(f"{self.filter}*", "**") if self.filter else "**"
        return {str(d.relative_to(root)) for root in self.summary_dirs for d in root.glob(pattern)
                if d.is_dir() and d != root and not any(c.is_dir() for c in d.iterdir())}


def _tensor_roots(root: Path) -> list:
    """The tensor directories `root` is or holds."""
    if fnmatch.fnmatch(str(root), f"*/{CSEVENTS}*"):
        return [root]
    return sorted(root.rglob(CSEVENTS + "*")) if root.is_dir() else []


def _readable(directory: Path) -> bool:
    """Whether `directory` is a tensor directory of the format written here: False (with a
    warning) for a file or another version; NotFound without its metadata."""
    if not directory.is_dir():
        warnings.warn(f"Expected {directory} to be a directory containing Cerebras summaries, but it is a file. "
                      f"Skipping as it has an unknown format.", stacklevel=3)
        return False
    metadata = directory / METADATA
    if not metadata.exists():
        raise NotFound(f"Could not detect version of Cerebras summaries at directory {directory}: it has no "
                       f"{METADATA}.", hint="Read a directory a cstorch SummaryWriter wrote.")
    version = json.loads(metadata.read_text()).get(VERSION_KEY)
    if version != VERSION:
        warnings.warn(f"Unknown version {version} for Cerebras summaries at directory {directory}. Skipping this "
                      f"directory.", stacklevel=3)
        return False
    return True
