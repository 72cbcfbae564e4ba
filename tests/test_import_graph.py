"""No import cycles in vitjax: between its packages, and between its files.

The graph is read from the source with `ast` (nothing is imported), so an import inside a function
counts as much as one at the top: it still ties the two packages together. A unit of the package
graph is a subpackage (`vitjax.train`) or a top-level module (`vitjax.parallel`); a file's import of
its parent package (implied by every `import vitjax.x.y`) is not an edge, an explicit one is.
"""
import ast
import pathlib

import pytest

import vitjax

ROOT = pathlib.Path(vitjax.__file__).parent


def module_files(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for every .py under the package directory `root`."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imported_names(module: str, path: pathlib.Path):
    """Every absolute name an import statement of the file names (`from a import b` gives a.b and a)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b`: b is a submodule if one exists, else a name defined in a.
            yield from ((f"{base}.{alias.name}", base) for alias in node.names)


def file_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    modules = module_files(root)
    graph = {}
    for module, path in modules.items():
        targets = set()
        for candidates in _imported_names(module, path):
            target = next((name for name in candidates if name in modules), None)
            if target is not None and target != module:
                targets.add(target)
        graph[module] = targets
    return graph


def unit_of(module: str, packages: set[str]) -> str:
    """The package-graph node of a module: its top-level subpackage, else the module itself."""
    parts = module.split(".")
    head = ".".join(parts[:2])
    return head if head in packages or len(parts) <= 2 else module


def package_graph(root: pathlib.Path) -> dict[str, set[str]]:
    modules = file_graph(root)
    packages = {m for m, path in module_files(root).items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        unit = unit_of(module, packages)
        edges = graph.setdefault(unit, set())
        edges.update(unit_of(t, packages) for t in targets)
        edges.discard(unit)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None: depth-first search for an edge back into the current path."""
    done, path, on_path = set(), [], set()

    def visit(node):
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return path[path.index(nxt):] + [nxt]
            if nxt not in done:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            found = visit(start)
            if found:
                return found
    return None


def _describe(graph) -> str:
    return "\n".join(f"  {unit} -> {', '.join(sorted(targets)) or '-'}" for unit, targets in sorted(graph.items()))


def test_no_cycle_between_packages():
    graph = package_graph(ROOT)
    cycle = find_cycle(graph)
    assert cycle is None, (f"import cycle between vitjax's packages: {' -> '.join(cycle)}; move the shared "
                           f"code to the lower package. The package graph:\n{_describe(graph)}")


def test_no_cycle_between_files():
    cycle = find_cycle(file_graph(ROOT))
    assert cycle is None, f"import cycle between vitjax's files: {' -> '.join(cycle) if cycle else ''}"


def _write_tree(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_detector_finds_a_cycle_through_a_function_level_and_a_relative_import(tmp_path):
    root = _write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "import os\n",
        "pkg/a/__init__.py": "",
        "pkg/a/one.py": "from pkg.b import two\nfrom pkg import low\n",
        "pkg/b/__init__.py": "",
        "pkg/b/two.py": "def late():\n    from ..a import one\n",
    })
    assert package_graph(root) == {"pkg": set(), "pkg.low": set(), "pkg.a": {"pkg.b", "pkg.low"},
                                   "pkg.b": {"pkg.a"}}
    assert find_cycle(package_graph(root)) == ["pkg.a", "pkg.b", "pkg.a"]
    assert find_cycle(file_graph(root)) == ["pkg.a.one", "pkg.b.two", "pkg.a.one"]


@pytest.mark.parametrize("importer", ["from pkg.a import one\n", "import pkg.a.one\n", "from .a import one\n"])
def test_detector_passes_a_graph_without_cycles(tmp_path, importer):
    root = _write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": importer,
        "pkg/a/__init__.py": "from pkg.a.one import thing\n",
        "pkg/a/one.py": "from pkg.a import two\nthing = 1\n",
        "pkg/a/two.py": "",
    })
    assert package_graph(root)["pkg.top"] == {"pkg.a"}
    assert find_cycle(package_graph(root)) is None
    assert find_cycle(file_graph(root)) is None
