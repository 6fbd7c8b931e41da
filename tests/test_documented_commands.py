"""Every command the README and the docs show names a module, make target and configuration that exist.

Commands are read from code (fenced blocks and `spans`) of README.md and docs/*.md. A
``python -m`` module must be runnable; a ``make`` target must be in the Makefile; a
``python -m suite.run`` command must compose (the first value of each swept setting), so a renamed
setting, group or choice in the docs fails here rather than in a reader's shell.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

from hydra import compose, initialize_config_dir

from suite.runtime.compose import CONF

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code(text: str) -> list[str]:
    """The lines of fenced blocks and the contents of inline `spans`."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    prose = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    return [line for block in blocks for line in block.splitlines()] + re.findall(r"`([^`\n]+)`", prose)


def commands(pattern: str) -> list[tuple[str, str]]:
    """(page, the command from ``pattern`` on) for every code line that holds it."""
    found = []
    for page in PAGES:
        for line in code(page.read_text()):
            for match in re.finditer(pattern, line):
                found.append((page.name, line[match.start() :].split("  #")[0].split(" | ")[0].strip()))
    return found


def test_every_module_run_with_python_m_exists():
    missing = []
    for page, command in commands(r"python -m [\w.]+"):
        module = command.split()[2]
        if "<" in module:  # a placeholder: python -m suite.tools.<name>
            continue
        spec = importlib.util.find_spec(module)
        runnable = spec is not None and (
            spec.submodule_search_locations is None or importlib.util.find_spec(module + ".__main__")
        )
        if not runnable:
            missing.append(f"{page}: {command}")
    assert not missing, "\n".join(missing)


def test_every_make_target_shown_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*)(?:\s[\w -]*)?:(?!=)", makefile, re.M))
    targets |= {t for line in re.findall(r"^([a-z][\w -]+):(?!=)", makefile, re.M) for t in line.split()}
    shown = {(page, c.split()[1]) for page, c in commands(r"(?<![\w-])make [a-z][\w-]*") if len(c.split()) > 1}
    assert not [f"{p}: make {t}" for p, t in shown if t not in targets]


def overrides(command: str) -> list[str] | None:
    """The Hydra overrides of a ``python -m suite.run`` command, the first value of each sweep; None if it cannot be
    read alone."""
    if "$" in command or "..." in command or "<" in command:
        return None  # a shell variable or a placeholder
    try:
        words = shlex.split(command)[3:]
    except ValueError:
        return None
    out = []
    for word in words:
        if word.startswith("[") and word.endswith("]"):  # an optional part, as in [model=lstm]: composed too
            word = word[1:-1]
        if word.startswith("-") or "=" not in word or word.startswith(("hydra.", "hydra/", "'hydra", "+hydra")):
            continue
        key, _, value = word.partition("=")
        if value.startswith(("glob(", "range(", "choice(")):
            continue
        out.append(f"{key}={value.split(',')[0] if not value.startswith('[') else value}")
    return out


def test_every_documented_run_composes():
    failed = []
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for page, command in commands(r"python -m suite\.run\b"):
            if (found := overrides(command)) is None:
                continue
            try:
                compose(config_name="config", overrides=found)
            except Exception as err:  # noqa: BLE001 - every failure is listed
                failed.append(f"{page}: {command}\n    {type(err).__name__}: {str(err).splitlines()[0]}")
    assert not failed, "\n".join(failed)


def test_the_reader_finds_commands_in_blocks_and_spans():
    text = "prose `python -m suite.compare a b` more\n```bash\nmake bench   # a comment\n```\n"
    assert code(text) == ["make bench   # a comment", "python -m suite.compare a b"]
    assert overrides("python -m suite.run -m task=sentiment model=transformer,lstm 'hydra.sweep.dir=x' [seed=1]") == [
        "task=sentiment",
        "model=transformer",
        "seed=1",
    ]
