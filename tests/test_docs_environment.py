"""docs/scaling.md's table of environment variables says truly who reads each: the installed jax, vitjax,
or both (a JAX_* name that only vitjax reads is easy to take for JAX's own, and the other way round)."""
import os
import re

import jax
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAX_SOURCES = os.path.join(os.path.dirname(jax.__file__), "_src")
VITJAX_SOURCES = os.path.join(ROOT, "vitjax")


def _sources(top: str) -> str:
    texts = []
    for directory, _, files in os.walk(top):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as f:
                    texts.append(f.read())
    return "\n".join(texts)


def _table() -> dict[str, set[str]]:
    """{variable: {'JAX', 'vitjax'}} from the table whose header is '| variable | read by | ...'."""
    with open(os.path.join(ROOT, "docs", "scaling.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("| variable | read by |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        names, readers = line.split("|")[1:3]
        for name in re.findall(r"`([A-Z_]+)`", names):
            rows[name] = {reader.strip() for reader in readers.split(" and ")}
    return rows


def _read_by_jax(name: str, jax_text: str) -> bool:
    """Read as a literal environment name, or as a config option (JAX's env name is the upper-cased option)."""
    literal = re.search(rf"""['"]{name}['"]""", jax_text)
    option = re.search(rf"""name\s*=\s*['"]{name.lower()}['"]""", jax_text)
    return bool(literal or option)


TABLE = _table()


def test_the_table_names_the_variables_the_multi_host_sections_use():
    assert {"JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_NUM_CPU_DEVICES",
            "VITJAX_CPU_DEVICES"} <= set(TABLE)
    assert all(readers <= {"JAX", "vitjax"} and readers for readers in TABLE.values()), TABLE


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_variable_is_read_by_whom_the_table_says(name):
    jax_text, vitjax_text = _sources(JAX_SOURCES), _sources(VITJAX_SOURCES)
    assert _read_by_jax(name, jax_text) == ("JAX" in TABLE[name]), name
    assert bool(re.search(rf"""['"]{name}['"]""", vitjax_text)) == ("vitjax" in TABLE[name]), name
