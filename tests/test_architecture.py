"""Review rules turned into tests: the layering of DESIGN.md holds in the source."""

from __future__ import annotations

import ast
import graphlib
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parent.parent / "src" / "steward"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


GROUND = {"errors", "domain", "filemodes", "logs", "sendby", "failpoints", "config", "telemetry"}
"""Shared by every layer: the error hierarchy, the vocabulary, process-wide helpers."""

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "domain": {"errors"},
    "filemodes": {"errors"},
    "logs": {"errors", "filemodes"},
    "sendby": {"errors"},
    "failpoints": set(),
    "config": {"errors", "filemodes"},
    # metrics and traces: every layer reports through it; it knows only the error hierarchy
    "telemetry": {"errors"},
    "store": GROUND,
    "sentinel": GROUND | {"store"},
    "runtime": GROUND | {"store"},
    "models": GROUND,
    "harness": GROUND | {"sentinel", "runtime", "models"},
    "memory": GROUND | {"store", "sentinel", "runtime", "models"},
    "connectors": GROUND | {"store", "sentinel", "runtime", "harness"},
    # the person's workspace and sandbox: its files are reached as the folder connector's are
    "environment": GROUND | {"store", "sentinel", "runtime", "harness", "connectors"},
    # connecting an account runs its connector's login check (in the connector's environment)
    "service": GROUND
    | {"store", "sentinel", "runtime", "memory", "connectors", "harness", "environment"},
    "web": GROUND | {"service"},
    "api": GROUND | {"service", "web"},
    # the composition roots: they wire every layer together
    "app": GROUND
    | {"store", "sentinel", "runtime", "models", "harness", "memory", "connectors", "environment"},
    "cli": GROUND | {"store", "runtime", "memory", "service", "api", "app", "demo"},
    # the demo's office offers its mail as a connector's typed tool (harness.tools)
    "demo": GROUND
    | {
        "store",
        "sentinel",
        "runtime",
        "models",
        "harness",
        "memory",
        "connectors",
        "service",
        "api",
        "app",
    },
    "testing": GROUND
    | {"store", "sentinel", "runtime", "models", "memory", "connectors", "api", "app"},
}
"""Every package of ``steward`` and the packages it may import: each layer only those below it.
A package missing here fails the test, so a new one is placed deliberately."""


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def steward_imports(path: Path) -> set[str]:
    """The ``steward`` packages ``path`` imports, by top-level name (``from steward import web``
    counts as ``web``)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "steward":
                names = [f"steward.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(n.split(".")[1] for n in names if n.startswith("steward."))
    return found


def test_the_layer_order_has_no_cycle() -> None:
    """The allowed imports form a strict order: no two packages may import each other, even
    through a third, so the table cannot be widened into a loop."""
    graphlib.TopologicalSorter(ALLOWED).static_order()  # raises CycleError


@pytest.mark.parametrize(
    "path",
    sorted(p for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_imports_point_down(path: Path) -> None:
    """A module imports only its own package and the packages :data:`ALLOWED` lists for it,
    wherever the import statement is (also under ``TYPE_CHECKING`` or inside a function)."""
    package = package_of(path)
    assert package in ALLOWED, f"{package} is not placed in the layer order"
    upward = steward_imports(path) - ALLOWED[package] - {package}
    assert not upward, f"{path.relative_to(SRC)} imports {sorted(upward)}, above {package}"


@pytest.mark.parametrize("path", modules("domain"), ids=lambda p: p.name)
def test_domain_does_no_io_and_imports_nothing_of_ours(path: Path) -> None:
    """Domain types import only the standard library, each other and the error hierarchy."""
    for name in imports_of(path):
        top = name.split(".")[0]
        if top == "steward":
            assert name.startswith(("steward.domain", "steward.errors")), name
        else:
            assert top in sys.stdlib_module_names, f"{path.name} imports {name}"


@pytest.mark.parametrize("package", ["domain", "runtime", "cli"])
def test_only_the_store_contains_sql(package: str) -> None:
    """SQLAlchemy is imported only under steward.store."""
    for path in modules(package):
        assert not any(n.split(".")[0] == "sqlalchemy" for n in imports_of(path)), path


def test_runtime_never_calls_a_model() -> None:
    """The runtime knows no model SDK: models plug in behind the Harness interface."""
    for path in modules("runtime"):
        assert not imports_of(path) & {"openai", "anthropic"}, path


@pytest.mark.parametrize("path", modules("cli"), ids=lambda p: p.name)
def test_interfaces_go_through_the_service(path: Path) -> None:
    """CLI commands use the service facade, not the store's query methods."""
    assert "svc.store." not in path.read_text(), path
