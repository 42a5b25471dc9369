"""Shell completion for the ``coterie`` command, written from its own argument parser (so it
never falls behind): ``eval "$(coterie completion bash)"``, or ``zsh`` (through bashcompinit)."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh")


def _words(parser: argparse.ArgumentParser, path: str, table: dict[str, list[str]]) -> None:
    """``table[path]``: what may follow ``coterie PATH`` (subcommands, options, choices)."""
    words: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words.append(name)
                _words(sub, f"{path} {name}".strip(), table)
        else:
            words.extend(o for o in action.option_strings if o.startswith("--"))
            if action.choices and not action.option_strings:
                words.extend(str(choice) for choice in action.choices)
    table[path] = words


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell``."""
    table: dict[str, list[str]] = {}
    _words(parser, "", table)
    cases = "\n".join(
        f'        "{path}") words="{" ".join(words)}" ;;' for path, words in sorted(table.items())
    )
    body = f"""_coterie() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" == -* ]] && continue
        case "${{path:+$path }}$word" in
{chr(10).join(f'            "{p}") path="{p}" ;;' for p in sorted(table) if p)}
        esac
    done
    local prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    case "$prev" in
        --config|--chart|-o|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local words=""
    case "$path" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _coterie coterie
"""
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body
