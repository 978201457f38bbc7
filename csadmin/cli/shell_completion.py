"""bash and zsh completion for the one-shot `cs`, generated from the command table.

    python -m csadmin.cli.shell_completion DIR    # writes DIR/bash/cs and DIR/zsh/_cs

The repository keeps the output in completions/ (tests/csadmin/test_shell_completion.py fails
when it differs from what this writes) and the wheel installs it where the shells look:
<prefix>/share/bash-completion/completions/cs and <prefix>/share/zsh/site-functions/_cs.

Both scripts share one core, `_cs_candidates CUR WORD...`, written in the shell language bash
and zsh both run (case, for, local): it skips the global options, follows the command words,
then offers a command's options, an option's values, or files (`__files__`). The per-shell part
only hands it the words and turns its answer into COMPREPLY (bash) or compadd/_files (zsh).
Live values (event types, run ids, fault names) need csd and are the interactive shell's only.
"""

from __future__ import annotations

import os
import sys

from .commands import COMMANDS, GLOBAL_OPTIONS, all_names, options_of
from .grammar import Command, Option

FILES = "__files__"  # the core's answer meaning "complete file names"
HELP_FLAGS = ("--help", "-h")


def _offered() -> dict[tuple[str, ...], Command]:
    """Every spelling of every command the one-shot `cs` takes (not the shell's own `exit`)."""
    return {words: c for words, c in all_names().items() if not c.shell_only}


def _next_words(table: dict, prefix: tuple[str, ...]) -> list[str]:
    n = len(prefix)
    return sorted({words[n] for words in table if len(words) > n and words[:n] == prefix})


def _values(option: Option) -> str:
    if option.values:
        return " ".join(option.values)
    return FILES if option.metavar == "FILE" else ""


def _case(function: str, arms: list[tuple[str, str]], otherwise: str = "") -> str:
    """A shell function printing the words of the arm its first argument matches."""
    lines = [f"{function}() {{", '    case "$1" in']
    lines += [f"        {_quote(key)}) echo {_quote(value)} ;;" for key, value in arms]
    lines += [f"        *) {otherwise or 'return 1'} ;;", "    esac", "}"]
    return "\n".join(lines)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def core() -> str:
    """The shell functions both scripts share, with the table's data in them."""
    table = _offered()
    prefixes = sorted({words[:n] for words in table for n in range(len(words))})
    next_arms = [(" ".join(p), " ".join(_next_words(table, p))) for p in prefixes]
    option_arms, value_option_arms, value_arms, file_commands = [], [], [], []
    for words, command in sorted(table.items()):
        name = " ".join(words)
        options = options_of(command)
        option_arms.append((name, " ".join([o.name for o in options] + ["--help"])))
        value_option_arms.append((name, " ".join(o.name for o in options if o.takes_value)))
        value_arms += [(f"{name} {o.name}", _values(o)) for o in options if o.takes_value and _values(o)]
        if any(a.metavar == "FILE" for a in command.arguments):
            file_commands.append(name)
    globals_with_values = [o.name for o in GLOBAL_OPTIONS if o.takes_value]
    value_arms += [(o.name, _values(o)) for o in GLOBAL_OPTIONS if o.takes_value and _values(o)]
    parts = [
        _case("_cs_next", next_arms),
        _case("_cs_options", option_arms),
        _case("_cs_value_options", value_option_arms),
        _case("_cs_values", value_arms, otherwise="echo ''"),
        _case("_cs_file_argument", [(name, "") for name in file_commands]),
        CORE.replace("@GLOBALS_WITH_VALUES@", "|".join(globals_with_values))
            .replace("@GLOBALS@", " ".join(o.name for o in GLOBAL_OPTIONS))
            .replace("@FILES@", FILES),
    ]
    return "\n\n".join(parts)


CORE = r"""_cs_candidates() {
    local cur="$1" cmd="" state=globals pending="" w opts helping=""
    shift
    for w in "$@"; do
        if [ -n "$pending" ]; then pending=""; continue; fi
        if [ "$state" = globals ]; then
            case "$w" in
                @GLOBALS_WITH_VALUES@) pending="$w"; continue ;;
                -*) continue ;;
            esac
            state=words
        fi
        if [ "$state" = words ]; then
            case " $(_cs_next "$cmd") " in
                *" $w "*)
                    cmd="${cmd:+$cmd }$w"
                    if [ "$cmd" = help ]; then helping=1; cmd=""; fi
                    continue ;;
            esac
            state=args
        fi
        case " $(_cs_value_options "$cmd") " in
            *" $w "*) pending="$w" ;;
        esac
    done
    if [ -n "$pending" ]; then
        if [ "$state" = globals ]; then _cs_values "$pending"; else _cs_values "$cmd $pending"; fi
        return
    fi
    if [ "$state" = globals ]; then
        case "$cur" in
            -*) echo "@GLOBALS@" ;;
            *) _cs_next "" ;;
        esac
        return
    fi
    if opts=$(_cs_options "$cmd"); then
        [ -n "$helping" ] && return
        case "$cur" in
            -*) echo "$opts" ;;
            *) if _cs_file_argument "$cmd" >/dev/null; then echo "@FILES@"; elif [ "$state" = words ]; then echo "$opts"; fi ;;
        esac
        return
    fi
    [ "$state" = words ] && _cs_next "$cmd"
}"""

BASH = """# bash completion for `cs` (the CS-2 admin console), one-shot use.
# Generated from csadmin/cli/commands.py by `python -m csadmin.cli.shell_completion`; do not edit.

{core}

_cs() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" candidates
    candidates=$(_cs_candidates "$cur" "${{COMP_WORDS[@]:1:COMP_CWORD-1}}")
    if [ "$candidates" = "{files}" ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
    fi
}}
complete -F _cs cs
"""

ZSH = """#compdef cs
# zsh completion for `cs` (the CS-2 admin console), one-shot use.
# Generated from csadmin/cli/commands.py by `python -m csadmin.cli.shell_completion`; do not edit.

{core}

_cs() {{
    local candidates
    candidates=$(_cs_candidates "${{words[CURRENT]}}" "${{(@)words[2,CURRENT-1]}}")
    if [[ "$candidates" == "{files}" ]]; then
        _files
    else
        compadd -- ${{=candidates}}
    fi
}}

_cs "$@"
"""


def bash_script() -> str:
    return BASH.format(core=core(), files=FILES)


def zsh_script() -> str:
    return ZSH.format(core=core(), files=FILES)


# Where each script goes under the completions directory (and, in the wheel, under share/).
SCRIPTS = {os.path.join("bash", "cs"): bash_script, os.path.join("zsh", "_cs"): zsh_script}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m csadmin.cli.shell_completion DIR", file=sys.stderr)
        return 2
    for relative, make in SCRIPTS.items():
        path = os.path.join(argv[0], relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(make())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
