"""bash and zsh completion for the one-shot `cs`: generated from the command table, kept in
completions/ as the wheel ships it, and run in a real bash (and zsh, where installed)."""

import os
import shutil
import subprocess
import tomllib

import pytest

from csadmin.cli import shell_completion
from tests.harness import ROOT

BASH_FILE = os.path.join(ROOT, "completions", "bash", "cs")
ZSH_FILE = os.path.join(ROOT, "completions", "zsh", "_cs")


def test_the_shipped_scripts_are_what_the_table_generates():
    for relative, make in shell_completion.SCRIPTS.items():
        with open(os.path.join(ROOT, "completions", relative), encoding="utf-8") as f:
            assert f.read() == make(), f"completions/{relative} is stale: python -m csadmin.cli.shell_completion completions"


def test_the_wheel_installs_them_where_the_shells_look():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data_files = tomllib.load(f)["tool"]["setuptools"]["data-files"]
    assert data_files["share/bash-completion/completions"] == ["completions/bash/cs"]
    assert data_files["share/zsh/site-functions"] == ["completions/zsh/_cs"]


def bash(script: str) -> str:
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"source {BASH_FILE}\n{script}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def complete_in_bash(*words: str) -> list[str]:
    """COMPREPLY after TAB at the end of `cs WORDS...` (the last word is the one being completed)."""
    quoted = " ".join(f"'{w}'" for w in ("cs", *words))
    out = bash(f"COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _cs; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    return [line for line in out.splitlines() if line]


def test_sourcing_it_in_bash_registers_cs():
    assert bash("complete -p cs").strip() == "complete -F _cs cs"


def test_bash_completes_subcommands_options_and_values():
    assert complete_in_bash("system", "st") == ["standby", "status"]
    assert complete_in_bash("system", "standby", "--") == ["--no-confirm", "--force", "--output-format", "--help"]
    assert complete_in_bash("config", "execmode", "setup", "--mode", "") == [
        "PIPELINED", "WEIGHT_STREAMING", "pipelined", "weight-streaming"]


def test_bash_follows_global_options_and_help():
    assert complete_in_bash("--connect", "/tmp/csd.json", "--output-format", "json", "system", "fault", "in") == ["inject"]
    assert complete_in_bash("--output-format", "") == ["text", "json"]
    assert complete_in_bash("--emb") == ["--embedded"]
    assert complete_in_bash("help", "system", "f") == ["fault"]
    assert "exit" not in complete_in_bash("")  # the shell's own command is no one-shot's
    assert complete_in_bash("system", "fault", "scenario", ROOT + "/exam") == [ROOT + "/examples"]


def test_the_zsh_function_runs_in_a_real_zsh():
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (.ci/run installs it)")

    def complete(*words: str) -> str:
        array = " ".join(f"'{w}'" for w in ("cs", *words))
        done = subprocess.run(
            ["zsh", "-f", "-c", f"compadd() {{ print -r -- \"$@\" }}; _files() {{ print FILES }}; "
                                f"words=({array}); CURRENT={len(words) + 1}; source {ZSH_FILE}"],
            capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout.strip()

    assert complete("system", "st") == "-- activate date fault show standby status"  # compadd filters by prefix
    assert complete("config", "execmode", "setup", "--mode", "") == "-- PIPELINED WEIGHT_STREAMING pipelined weight-streaming"
    assert complete("system", "fault", "scenario", "") == "FILES"
