"""`.gitignore` covers what the examples write when run from a checkout, so `git status` stays
clean after trying the README's recipes. Asked of git itself (`git check-ignore`)."""

import shutil
import subprocess

import pytest

from tests.harness import ROOT

WRITTEN = [
    "performance.json",  # train_loop.py's default --performance-dir is "."
    "out/performance.json",  # the README's --performance-dir out
    "out-1234/performance.json",  # docs/slurm.md's out-$SLURM_JOB_ID
    "examples/performance.json",
    "model_dir/performance/performance.json",
    "model_dir/tfcs_0123abcd/program.bin",
    "model_dir/model-ckpt-100.h5",
    "model_dir/events.out.tfevents.1700000000.host",
    "performance/performance.json",
    "site/index.html",  # make docs (the README's Documentation)
]


def test_what_the_examples_write_is_ignored():
    if shutil.which("git") is None or subprocess.run(["git", "-C", ROOT, "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "-C", ROOT, "check-ignore", "--no-index", *WRITTEN], capture_output=True, text=True,
                          timeout=30)
    assert sorted(done.stdout.split()) == sorted(WRITTEN), done.stdout
    # ... and nothing the project keeps.
    kept = ["examples/train_loop.py", "docs/cli.md", "completions/bash/cs", "bench/results/x-full.json"]
    done = subprocess.run(["git", "-C", ROOT, "check-ignore", "--no-index", *kept], capture_output=True, text=True,
                          timeout=30)
    assert done.stdout == ""
