"""Every command the README and the docs show names a module and make target that exist.

Commands are read from code (fenced blocks and `spans`) of README.md and docs/*.md. A
``python -m`` module must be runnable; a ``make`` target must be in the Makefile and expand. That each
``python -m suite.run`` command composes and runs is ``test_documented_runs`` (slow), which reads the commands
with this module's reader.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code(text: str) -> list[str]:
    """The lines of fenced blocks (a line ending in a backslash joined with the next) and the contents of inline
    `spans`."""
    blocks = [re.sub(r"\\\n\s*", "", block) for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S)]
    prose = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    return [line for block in blocks for line in block.splitlines()] + re.findall(r"`([^`\n]+)`", prose)


def variables(text: str) -> dict[str, str]:
    """Shell variables a page's blocks set (``R=runs/x``, ``export OMP_NUM_THREADS=1; R=...``), for its commands."""
    found = {}
    for line in code(text):
        for name, value in re.findall(r"\bfor ([A-Za-z_]\w*) in (\S+)", line):  # a loop: its first value
            found[name] = value.rstrip(";")
        for name, value in re.findall(r"(?:^|;\s*|export\s+)([A-Z][A-Z0-9_]*)=(\S+?)(?=;|\s|$)", line):
            found[name] = value.strip("'\"")
    return found


def expanded(command: str, names: dict[str, str]) -> str:
    """``command`` with the page's ``$NAME`` and ``${NAME}`` replaced by what the page set them to."""
    return re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda m: names.get(m[1], m[0]), command)


def commands(pattern: str) -> list[tuple[str, str]]:
    """(page, the command from ``pattern`` on, its page's variables expanded) for every code line that holds it."""
    found = []
    for page in PAGES:
        text = page.read_text()
        names = variables(text)
        for line in code(text):
            for match in re.finditer(pattern, line):
                command = line[match.start() :].split("  #")[0].split(" | ")[0].split(" && ")[0].strip()
                found.append((page.name, expanded(command, names)))
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
    read alone (a shell variable or a placeholder in a setting; Hydra's own settings are not read)."""
    try:
        words = shlex.split(command)[3:]
    except ValueError:
        return None
    out = []
    for word in words:
        if word.startswith("[") and word.endswith("]"):  # an optional part, as in [model=lstm]: composed too
            word = word[1:-1]
        if word.lstrip("+").startswith(("hydra.", "hydra/")):
            continue  # where the run writes, and its launcher: not the run's own settings
        if word == "..." or "$" in word or "<" in word:
            return None
        if word.startswith("-") or "=" not in word:
            continue
        key, _, value = word.partition("=")
        if value.startswith(("glob(", "range(", "choice(")):
            continue
        out.append(f"{key}={value.split(',')[0] if not value.startswith('[') else value}")
    return out


def test_the_reader_finds_commands_in_blocks_and_spans():
    text = "prose `python -m suite.compare a b` more\n```bash\nmake bench   # a comment\n```\n"
    assert code(text) == ["make bench   # a comment", "python -m suite.compare a b"]
    block = "```bash\nexport OMP_NUM_THREADS=1; R=runs/x\npython -m suite.run a=1 \\\n    hydra.run.dir=$R/t\n```\n"
    assert code(block)[1] == "python -m suite.run a=1 hydra.run.dir=$R/t"
    assert variables(block) == {"OMP_NUM_THREADS": "1", "R": "runs/x"}
    loop = "```bash\nfor m in 16 64; do for L in 1024 4096; do\n  python -m suite.run n=$m L=$L\ndone; done\n```\n"
    assert expanded(code(loop)[1], variables(loop)).strip() == "python -m suite.run n=16 L=1024"
    assert expanded(code(block)[1], variables(block)) == "python -m suite.run a=1 hydra.run.dir=runs/x/t"
    assert overrides("python -m suite.run -m task=sentiment model=transformer,lstm 'hydra.sweep.dir=x' [seed=1]") == [
        "task=sentiment",
        "model=transformer",
        "seed=1",
    ]


def test_every_make_target_shown_expands():
    """``make -n``: the target's recipe, and every recipe it depends on, expands (a variable or a macro it uses is
    defined) without running anything."""
    shown = sorted({c.split()[1] for _, c in commands(r"(?<![\w-])make [a-z][\w-]*") if len(c.split()) > 1})
    failed = []
    for target in shown:
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            failed.append(f"make -n {target}: {done.stderr.strip().splitlines()[-1:]}")
    assert not failed, "\n".join(failed)
