"""The package layers of ``suite/`` (README, "Package map"): no module imports from a layer above its own,
and packages that share a layer do not import each other. Read from the source (every import,
including the ones inside functions), so a lazy import cannot hide an upward edge."""

from __future__ import annotations

import ast
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "suite"

# Bottom to top. A package may import its own modules and anything of a lower rank.
RANKS: dict[str, int] = {
    "types": 0,  # the contracts every layer speaks
    "runtime": 1,  # the record, failures, files, devices, numerics, tracking, config composition
    "nn": 1,  # building blocks below attention and the models (dropout)
    "data": 2,
    "attention": 2,
    "models": 3,
    "generation": 4,
    "training": 4,
    "report": 4,  # reads records only: it needs no model, trainer or timer
    "measure": 5,
    "compress": 6,
    "jobs": 7,
    "tools": 8,  # command-line benchmarks that build whole jobs
    "run": 8,  # the entry point
    "compare": 8,  # ``python -m suite.compare``, the documented command for suite.report.compare
    "tune": 8,  # experiment=tune: the study that drives whole runs (its sweeper: hydra_plugins/suite_tune)
}


def layer(module: str) -> str:
    """'suite.training.trainer' -> 'training'; 'suite.run' -> 'run'."""
    return module.split(".")[1]


def suite_imports(path: Path) -> list[tuple[int, str]]:
    """(line, 'suite.x.y') for every import of a suite module in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("suite."):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.module == "suite":  # from suite import x: x is the layer
            found += [(node.lineno, f"suite.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("suite.")]
    return found


def module_name(path: Path, root: Path) -> str:
    return ".".join(("suite",) + path.relative_to(root).with_suffix("").parts)


def upward_imports(root: Path) -> list[str]:
    """'file:line: ...' for every import of a layer above the file's own, or of a sibling on its layer."""
    wrong = []
    for path in sorted(root.rglob("*.py")):
        if path.parent == root and path.name == "__init__.py":
            continue
        own = layer(module_name(path, root))
        for line, target in suite_imports(path):
            theirs = layer(target)
            if theirs != own and RANKS[theirs] >= RANKS[own]:
                wrong.append(
                    f"{path.relative_to(root.parent)}:{line}: {own} (rank {RANKS[own]}) imports "
                    f"{target} (rank {RANKS[theirs]})"
                )
    return wrong


def test_every_package_has_a_rank():
    packages = {p.name for p in SUITE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SUITE.glob("*.py")} - {"__init__"}
    assert packages | modules == set(RANKS), (
        "a new package or top-level module needs its rank here (and in the README's map)"
    )


def test_no_module_imports_from_a_layer_above_it():
    wrong = upward_imports(SUITE)
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_upward_lazy_and_sibling_imports(tmp_path):
    root = tmp_path / "suite"
    (root / "runtime").mkdir(parents=True)
    (root / "training").mkdir()
    (root / "runtime" / "a.py").write_text(
        "from suite.runtime import numerics\n\ndef f():\n    from suite.jobs.speed import speed_job\n"
    )
    (root / "training" / "b.py").write_text("import suite.report.plots\nfrom suite import types\n")
    assert sorted(t for _, t in suite_imports(root / "runtime" / "a.py")) == ["suite.jobs.speed", "suite.runtime"]
    wrong = upward_imports(root)
    assert len(wrong) == 2 and "runtime/a.py:4" in wrong[0] and "suite.jobs.speed" in wrong[0]
    assert "training/b.py:1" in wrong[1] and "suite.report.plots" in wrong[1]  # a sibling on rank 4


def task_names() -> set[str]:
    """Every task's config name and its ``name:`` (what a record's ``task`` holds)."""
    conf = SUITE.parent / "conf" / "task"
    names = {p.stem for p in conf.glob("*.yaml")}
    for p in conf.glob("*.yaml"):
        names |= {line.split(":", 1)[1].strip() for line in p.read_text().splitlines() if line.startswith("name:")}
    return names


def string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, value) of every string constant that is not a docstring."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_suite_names_no_task():
    """``suite/`` knows no domain: no code compares with a task's name or imports a task module; a task's own tables
    and figures live beside it in ``tasks/`` (``suite.report.section``)."""
    names, found = task_names(), []
    assert {"mqar", "sentiment", "language_model"} <= names
    for path in sorted(SUITE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        found += [
            f"{path.relative_to(SUITE)}:{line}: {value!r}" for line, value in string_constants(tree) if value in names
        ]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tasks":
                found.append(f"{path.relative_to(SUITE)}:{node.lineno}: imports {node.module}")
            elif isinstance(node, ast.Import):
                found += [
                    f"{path.relative_to(SUITE)}:{node.lineno}: imports {a.name}"
                    for a in node.names
                    if a.name.split(".")[0] == "tasks"
                ]
    assert not found, "suite/ names a task:\n" + "\n".join(found)
