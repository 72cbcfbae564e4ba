"""Every third-party module vitjax imports is declared in pyproject.toml, so that a clean install runs
it: a module-level import among the dependencies, an import inside a function (an optional feature,
e.g. the timm comparison) at least in an extra."""
import ast
import importlib.metadata
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Modules whose distribution another declared one pins to its own version: jax installs its jaxlib.
COMPANIONS = {"jaxlib": "jax"}


def _imports() -> dict[str, bool]:
    """{top-level module: imported at module level somewhere} over vitjax/'s files."""
    found = {}
    for directory, _, files in os.walk(os.path.join(ROOT, "vitjax")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(directory, name)) as f:
                    tree = ast.parse(f.read())
                _collect(tree, found)
    return found


def _collect(tree, found) -> None:
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        at_module_level = id(node) in top_level or _inside_module_level_try(tree, node)
        for name in names:
            root = name.split(".")[0]
            found[root] = found.get(root, False) or at_module_level


def _inside_module_level_try(tree, node) -> bool:
    return any(isinstance(stmt, ast.Try) and node in ast.walk(stmt) for stmt in tree.body)


def _declared():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]

    def names(requirements):
        return {_normal(re.match(r"[A-Za-z0-9_.-]+", r).group()) for r in requirements}

    extras = set().union(*(names(v) for v in project.get("optional-dependencies", {}).values()))
    return names(project["dependencies"]), extras


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_third_party_import_is_declared():
    required, optional = _declared()
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module, at_module_level in sorted(_imports().items()):
        if module == "vitjax" or module in sys.stdlib_module_names:
            continue
        provided = {_normal(d) for d in distributions.get(module, [])}
        # tensorflow-cpu provides `tensorflow` here; pyproject declares it per platform.
        if "tensorflow-cpu" in provided:
            provided.add("tensorflow")
        if module in COMPANIONS:
            provided.add(COMPANIONS[module])
        allowed = required if at_module_level else required | optional
        if not provided & allowed:
            missing.append(f"{module} ({'module level' if at_module_level else 'in a function'}, "
                           f"from {sorted(provided) or 'no installed distribution'})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)
