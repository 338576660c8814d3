"""Review rules turned into tests: the layering of DESIGN.md holds in the source."""

from __future__ import annotations

import ast
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
