"""`cortex completion bash|zsh|fish`: shell completion from the command table itself.

The scripts are small and hold no list of commands: on each <Tab> they ask
`cortex completion SHELL --line "<the command line so far>"`, and this module answers from the
grammar (cortex/cli/grammar.py), so a new command or option completes without a new script.
Task ids complete with their goals (zsh and fish show them), newest first, from this
workspace's store, plus `@latest`; an option whose values are listed in its help (`--mode
change|investigate|review`) completes those values. Nothing here writes.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any

from cortex.cli.grammar import COMMANDS, GLOBAL, Cmd, Opt
from cortex.cli.parser import BY_WORDS, UsageError
from cortex.kernel.validate import shown

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel

SHELLS = ("bash", "zsh", "fish")
IDS_SHOWN = 50
"""Task ids offered at once (the newest); a prefix typed first narrows them."""
_CHOICES = re.compile(r"[a-z_]+(?:\|[a-z_]+)+")

Candidate = tuple[str, str]
"""A completion and what it is (a goal, an option's help)."""

_BASH = """\
# cortex completion for bash. Load it now:     source <(cortex completion bash)
# or for every shell: cortex completion bash > ~/.local/share/bash-completion/completions/cortex
_cortex() {
    local IFS=$'\\n'
    COMPREPLY=($(cortex completion bash --line "${COMP_LINE:0:COMP_POINT}" 2>/dev/null))
}
complete -o default -F _cortex cortex
"""

_ZSH = """\
#compdef cortex
# cortex completion for zsh (after compinit). Load it now:  source <(cortex completion zsh)
# or save it as _cortex in a directory of your $fpath.
_cortex() {
    local -a reply
    local line="${(j: :)${(@)words[1,CURRENT]}}"
    reply=("${(@f)$(cortex completion zsh --line "$line" 2>/dev/null)}")
    if [[ -n ${reply[1]} ]]; then
        _describe -t cortex cortex reply
    else
        _files
    fi
}
compdef _cortex cortex
"""

_FISH = """\
# cortex completion for fish. Load it now:  cortex completion fish | source
# or for every shell: cortex completion fish > ~/.config/fish/completions/cortex.fish
function __cortex_complete
    cortex completion fish --line (commandline -cp) 2>/dev/null
end
complete -c cortex -f -a '(__cortex_complete)'
"""

SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}


def check_shell(shell: str) -> str:
    """`shell` if it is one this module writes for (else exit 4)."""
    if shell not in SHELLS:
        raise UsageError(
            f"cortex completion: shell must be bash, zsh or fish, not {shown(shell, 40)!r}"
        )
    return shell


def render(shell: str, candidates: list[Candidate]) -> str:
    """Candidates as the shell's script reads them: one per line."""
    if shell == "bash":
        return "".join(f"{value}\n" for value, _ in candidates)
    if shell == "zsh":
        return "".join(
            f"{value.replace(':', chr(92) + ':')}:{about}\n" for value, about in candidates
        )
    return "".join(f"{value}\t{about}\n" for value, about in candidates)


def text_of(data: dict[str, Any]) -> str:
    """What `cortex completion` prints: the script, or the candidates the script reads.

    Case text (goals) is made terminal-safe, as everything the CLI prints is.
    """
    from cortex.screen.text import safe

    if "script" in data:
        return str(data["script"])
    pairs = [(safe(c["value"]), safe(c["description"])) for c in data["candidates"]]
    return render(str(data["shell"]), pairs)


def complete(kernel: Kernel, line: str) -> list[Candidate]:
    """The candidates for the last word of `line` (a command line up to the cursor)."""
    before, current = _split(line)
    words: list[str] = []
    command: Cmd | None = None
    used: set[str] = set()
    positionals = 0
    pending: Opt | None = None
    only_positionals = False
    for word in before[1:]:  # the first word is the program
        if pending is not None:
            pending = None
        elif only_positionals or not word.startswith("-") or word == "-":
            if command is None and not only_positionals:
                words.append(word)
                command = BY_WORDS.get(tuple(words))
            else:
                positionals += 1
        elif word == "--":
            only_positionals = True
        else:
            name = word.partition("=")[0]
            opt = _option(command, name)
            used.add(name)
            if opt is not None and opt.kind != "flag" and "=" not in word:
                pending = opt
    if pending is not None:
        return _values(kernel, pending, current)
    if current.startswith("-") and not only_positionals:
        return _options(command, current, used)
    if command is None:
        return _next(words, current)
    if positionals < len(command.positionals):
        return _positional(kernel, command.positionals[positionals][0], current)
    return []


def _split(line: str) -> tuple[list[str], str]:
    """The words before the cursor's word, and the (partial) word at the cursor."""
    try:
        tokens = shlex.split(line)
    except ValueError:
        tokens = line.split()  # an open quote: good enough to complete the word in it
    if not line or line[-1].isspace():
        return tokens, ""
    return tokens[:-1], tokens[-1] if tokens else ""


def _option(command: Cmd | None, name: str) -> Opt | None:
    for opt in (*(command.options if command else ()), *GLOBAL):
        if name in {opt.name, opt.short}:
            return opt
    return None


def _options(command: Cmd | None, current: str, used: set[str]) -> list[Candidate]:
    found = [
        (opt.name, opt.help)
        for opt in (*(command.options if command else ()), *GLOBAL)
        if opt.name.startswith(current) and (opt.kind == "repeat" or opt.name not in used)
    ]
    if "--help".startswith(current):
        found.append(("--help", "show the help"))
    return found


def _next(words: list[str], current: str) -> list[Candidate]:
    prefix = tuple(words)
    found: dict[str, str] = {}
    for cmd in COMMANDS:
        if cmd.words[: len(prefix)] != prefix or len(cmd.words) <= len(prefix):
            continue
        word = cmd.words[len(prefix)]
        if word.startswith(current) and len(cmd.words) == len(prefix) + 1:
            found[word] = cmd.help
        elif word.startswith(current):
            # A word that only leads to more words is described by the words under it.
            under = sorted(
                {
                    c.words[len(prefix) + 1]
                    for c in COMMANDS
                    if c.words[: len(prefix) + 1] == (*prefix, word)
                    and len(c.words) > len(prefix) + 1
                }
            )
            found.setdefault(word, ", ".join(under[:8]) + (", ..." if len(under) > 8 else ""))
    if not words and "help".startswith(current):
        found.setdefault("help", "the help of a command, or of all of them")
    return sorted(found.items())


def _positional(kernel: Kernel, name: str, current: str) -> list[Candidate]:
    if name == "task":
        return _tasks(kernel, current)
    if name == "shell":
        return [(shell, "completion for " + shell) for shell in SHELLS if shell.startswith(current)]
    if name == "name":  # case trust NAME: the configured verifiers
        names = sorted({*kernel.config.verifiers, "pytest"})
        return [(n, "a configured verifier") for n in names if n.startswith(current)]
    return []


def _values(kernel: Kernel, opt: Opt, current: str) -> list[Candidate]:
    if opt.name == "--parent":
        return _tasks(kernel, current)
    for text in (opt.help, opt.metavar):
        # The first `a|b|c` of the help lists the choices (`evidence kind: observation|...`).
        found = _CHOICES.search(text)
        if found:
            return [(c, opt.name) for c in found.group().split("|") if c.startswith(current)]
    return []


def _tasks(kernel: Kernel, current: str) -> list[Candidate]:
    """This workspace's cases, newest first, with their goals; and `@latest`."""
    from cortex.kernel.errors import CortexError
    from cortex.kernel.refs import LATEST, short

    found: list[Candidate] = []
    if LATEST.startswith(current):
        found.append((LATEST, "the newest case opened here"))
    store = kernel.store
    for task_id in store.list_ids():
        if len(found) > IDS_SHOWN:
            break
        if not task_id.startswith(current):
            continue
        try:
            case = store.read_case(task_id)
        except (CortexError, OSError):
            found.append((task_id, "(unreadable)"))
            continue
        goal = short(case.goal, 60) or ""
        found.append((task_id, f"{case.status}: {goal}"))
    return found
