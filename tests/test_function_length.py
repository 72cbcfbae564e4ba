"""No function in vitjax/ runs over 80 lines unless a `# long: <reason>` comment beside its def says why.

A function a reader can hold fits on a screen; a longer one is split into named steps. The reason,
where one stays long, goes on its `def` line or the line above.
"""
import ast
import pathlib
import re
import textwrap

LIMIT = 80
PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "vitjax"
_REASON = re.compile(r"#\s*long:\s*\S")


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int, int]]:
    """(qualified name, line of its def, lines from def to the end of its body) of every function
    in `source` over `limit` lines without a `# long: <reason>` comment."""
    lines = source.splitlines()
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = child.end_lineno - child.lineno + 1
                beside = lines[max(child.lineno - 2, 0):child.lineno]  # the line above and the def line
                if length > limit and not any(_REASON.search(line) for line in beside):
                    found.append((prefix + child.name, child.lineno, length))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _function(name: str, body_lines: int, comment: str = "", above: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    return f"{above}\ndef {name}():{comment}\n{body}"


def test_no_function_in_vitjax_is_over_80_lines_without_a_reason():
    too_long = [f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({length} lines)"
                for path in sorted(PACKAGE.rglob("*.py"))
                for name, line, length in long_functions(path.read_text())]
    assert not too_long, ("split these into named steps, or put '# long: <reason>' beside the def:\n"
                          + "\n".join(too_long))


def test_the_check_names_long_functions_and_accepts_a_reason_beside_the_def():
    assert long_functions(_function("fits", LIMIT - 1)) == []  # the def line and 79 lines of body
    assert long_functions(_function("too_long", LIMIT)) == [("too_long", 2, LIMIT + 1)]
    assert long_functions(_function("on_the_def", LIMIT, comment="  # long: a table of cases")) == []
    assert long_functions(_function("above", LIMIT, above="# long: one step, read in order")) == []
    assert long_functions(_function("no_reason", LIMIT, comment="  # long:")) == [("no_reason", 2, LIMIT + 1)]
    nested = "class Model:\n" + textwrap.indent(_function("method", LIMIT), "    ")
    assert long_functions(nested) == [("Model.method", 3, LIMIT + 1)]


def parameter_counts(source: str) -> dict[str, int]:
    """{function name: its parameters, `self` and `cls` not counted} of every function in `source`."""
    counts = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            counts[node.name] = len([p for p in params if p.arg not in ("self", "cls")])
    return counts


def test_no_function_of_the_training_package_takes_more_than_8_parameters():
    """What a training step's functions need travels in a few named objects, not a dozen arguments."""
    crowded = [f"{path.relative_to(PACKAGE.parent)} {name} ({count})"
               for path in sorted((PACKAGE / "train").rglob("*.py"))
               for name, count in parameter_counts(path.read_text()).items() if count > 8]
    assert not crowded, "functions with more than 8 parameters:\n" + "\n".join(crowded)
    assert parameter_counts("def f(self, a, *, b, c=1): pass\nclass K:\n  def g(cls, d): pass") == {"f": 3, "g": 1}
