"""Config files outside absl: load `configs/x.py:arg` and apply `{'a.b': value}` overrides.

The CLI reads configs through absl's config flags; tools that handle many configs at once (the sweep
runner) need the same thing as plain functions, with the same strictness: an unknown key fails with
the key's name and the closest real key, never silently adds a field.

    config = load_config("configs/fashion_mnist/vit.py:long")
    apply_overrides(config, {"data.train_size": 1000, "model.patch_size": 7})
    argv = override_flags({"data.train_size": 1000})  # ['--config.data.train_size=1000'] for `vitjax train`
"""
import difflib
import importlib.util
import os

import ml_collections


class UnknownKeyError(KeyError, ValueError):
    """An override names a field the config does not have (a KeyError, also caught as ValueError)."""

    def __str__(self):  # KeyError would print the message quoted, like a dict key
        return str(self.args[0])


def split_path(path_with_arg: str) -> tuple[str, str | None]:
    """'configs/x.py:variant=B/16' -> ('configs/x.py', 'variant=B/16'); no colon -> (path, None)."""
    # Split after '.py' rather than at the first colon, so the argument may itself hold colons.
    head, sep, arg = path_with_arg.partition(".py:")
    if sep:
        return head + ".py", arg
    return path_with_arg, None


def load_module(path: str, name: str = "vitjax_config_file"):
    """Imports a Python file by path (not by module name: config files are not in a package)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config file {path!r} does not exist")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_config(path_with_arg: str) -> ml_collections.ConfigDict:
    """`get_config(arg)` of a config file, locked like the CLI's (no new keys can appear)."""
    path, arg = split_path(path_with_arg)
    module = load_module(path)
    if not hasattr(module, "get_config"):
        raise ValueError(f"config file {path!r} defines no get_config(arg) function")
    config = module.get_config(arg) if arg is not None else module.get_config()
    if not isinstance(config, ml_collections.ConfigDict):
        raise TypeError(f"get_config of {path!r} returned a {type(config).__name__}, not a ConfigDict")
    config.lock()
    return config


def apply_overrides(config: ml_collections.ConfigDict, overrides: dict) -> ml_collections.ConfigDict:
    """Sets dotted keys in place (and returns the config); a missing key raises UnknownKeyError naming it."""
    for dotted, value in overrides.items():
        parent, leaf = _parent_of(config, dotted)
        if isinstance(parent[leaf], tuple) and isinstance(value, list):
            value = tuple(value)  # sweep files written by hand often give shapes as lists
        try:
            parent[leaf] = value
        except TypeError as error:
            raise ValueError(f"override {dotted}={value!r}: {error}") from None
    return config


def override_flags(overrides: dict) -> list[str]:
    """The `--config.key=value` arguments that make `vitjax train` apply the same overrides."""
    return [f"--config.{key}={_flag_text(value)}" for key, value in overrides.items()]


def _parent_of(config, dotted: str):
    node, parts = config, dotted.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, ml_collections.ConfigDict) or part not in node:
            where = ".".join(parts[:depth]) or "the config"
            known = sorted(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
            close = difflib.get_close_matches(part, known, n=1)
            hint = f"; did you mean {'.'.join(parts[:depth] + close)!r}?" if close else ""
            raise UnknownKeyError(f"override key {dotted!r}: {where} has no field {part!r}{hint} "
                           f"(fields there: {', '.join(known) or 'none, it is not a group'})")
        if depth < len(parts) - 1:
            node = node[part]
    return node, parts[-1]


def _flag_text(value) -> str:
    """A value as absl's config-field parsers read it back (bools lower-case, tuples as literals)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return repr(tuple(value))
    return str(value)
