"""Every TOML and command example in the README and docs is parsed or run (issue 22): a newcomer
copies them, so each must be valid today."""

from __future__ import annotations

import re
import shlex
import textwrap
import tomllib
from pathlib import Path

import pytest

from coterie.framework.config import Problems, check_config
from coterie.ops.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
#: plugin names the docs' own examples invent (docs/writing_plugins.md walks through writing them)
INVENTED = {"tally"}


def blocks(*languages: str) -> list[tuple[str, int, str]]:
    """``(doc, line, text)`` of every fenced block in these languages."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(2) in languages:
                line = text[: match.start()].count("\n") + 1
                found.append((str(path.relative_to(ROOT)), line, textwrap.dedent(match.group(3))))
    return found


TOML = blocks("toml")
SHELL = blocks("console", "sh", "shell", "bash")


def config_like(data: dict) -> bool:
    from coterie.framework.config import Config

    return bool(data) and set(data) <= set(Config.model_fields)


@pytest.mark.parametrize(("doc", "line", "text"), TOML, ids=[f"{d}:{n}" for d, n, _ in TOML])
def test_toml_example_parses_and_validates(doc, line, text):
    data = tomllib.loads(text)  # a duplicated table (`[plugins]` twice) fails here
    if "build-system" in data or "project" in data:
        return  # a plugin's pyproject.toml
    assert config_like(data), f"{doc}:{line}: not a coterie config: {sorted(data)}"
    problems = Problems()
    assert check_config(data, problems) is not None and not problems, problems.lines


def test_there_are_examples():
    assert len(TOML) >= 10 and len(SHELL) >= 15


def commands() -> list[tuple[str, int, list[str], list[str]]]:
    """``(doc, line, argv, output lines that follow)`` of every ``$ command`` in shell blocks
    (``make run`` style blocks without ``$`` are read line by line)."""
    found = []
    for doc, line, text in SHELL:
        lines = text.splitlines()
        prompted = any(item.startswith("$ ") for item in lines)
        for index, item in enumerate(lines):
            if prompted and not item.startswith("$ "):
                continue
            command = item.removeprefix("$ ").split("  #")[0].split(" # ")[0].strip()
            command = command.rsplit(" | ", 1)[
                -1
            ]  # `printf '...' | coterie chat`: the coterie part
            if not command:
                continue
            output = []
            for after in lines[index + 1 :]:
                if after.startswith("$ "):
                    break
                output.append(after)
            try:
                argv = shlex.split(command)
            except ValueError:
                argv = command.split()
            found.append((doc, line + index + 1, argv, output))
    return found


COMMANDS = commands()
IDS = [f"{doc}:{line}:{' '.join(argv)[:40]}" for doc, line, argv, _ in COMMANDS]


@pytest.mark.parametrize(("doc", "line", "argv", "output"), COMMANDS, ids=IDS)
def test_command_example(doc, line, argv, output, capsys, monkeypatch):
    program = Path(argv[0]).name
    if program == "make":
        makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
        for target in argv[1:]:
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no make {target}"
        return
    if program in ("pip", "pip3") or argv[:3] == ["python", "-m", "pip"]:
        check_install(argv, doc)
        return
    if program != "coterie":
        return  # the environment, a benchmark, a container, a homeserver: not ours to run
    args = argv[1:]
    parser = build_parser()
    if args == ["--version"]:
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(args)
        assert exited.value.code == 0
        return
    parsed = parser.parse_args(args)  # every documented command line parses
    files = [a for a in args if a.endswith(".toml")]
    runnable = (
        parsed.command in ("roll", "odds", "plugins", "config")
        and all((ROOT / f).exists() for f in files)
        and not INVENTED & set(args)
    )
    if not runnable:
        return
    monkeypatch.chdir(ROOT)
    code = main(args)
    out, err = capsys.readouterr()
    shown_error = next((o for o in output if o.startswith("coterie: ") or "cannot" in o), None)
    if shown_error is not None:
        assert code != 0, out
        assert shown_error.split(":")[1].strip() in err, (shown_error, err)
    else:
        assert code == 0, err
        if output and output[0].strip():
            assert output[0].strip()[:20] in out, (output[0], out)


def check_install(argv: list[str], doc: str) -> None:
    """An install line works from a clone or a built wheel: it names a path (with real extras),
    never a name a package index would have to know."""
    targets = [a for a in argv[2:] if not a.startswith("-")]
    for target in targets:
        path, _, extras = target.partition("[")
        assert path.startswith((".", "/", "dist/")) or "/" in path, (
            f"{doc}: `{' '.join(argv)}` needs a package index; install from a clone or a wheel"
        )
        for extra in extras.rstrip("]").split(","):
            assert not extra or extra in EXTRAS, f"{doc}: no extra {extra!r}"
        if not path.startswith("dist/") and "*" not in path:
            assert (ROOT / path).exists() or "coterie-tally" in path, f"{doc}: no {path}"


def test_install_lines_in_prose_name_real_extras():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"pip install [^`\n]*", text):
            for extra in re.findall(r"\[([a-z,]+)\]", match.group(0)):
                for name in extra.split(","):
                    assert name in EXTRAS, f"{path.name}: {match.group(0)}"
            assert "'coterie[" not in match.group(0), (
                f"{path.name}: `{match.group(0)}` needs a package index coterie is not on"
            )
