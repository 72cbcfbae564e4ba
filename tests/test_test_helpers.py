"""Test files share helpers through helper modules and conftest fixtures, never by importing another test
file: such an import runs that file's module-level code again under another name, ties two files'
privates together, and breaks silently when the other file is renamed."""
import ast
import pathlib

TESTS = pathlib.Path(__file__).parent


def _imported_modules(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_no_test_file_imports_another():
    offenders = sorted(
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in TESTS.rglob("*.py")
        for module in _imported_modules(path)
        if module.startswith("tests.") and module.rsplit(".", 1)[-1].startswith("test_"))
    assert not offenders, offenders
