"""Whether two configs describe the same run: flattened key by key, each missing key read as the
schema's default, runtime-only keys and the runtime choices older versions wrote into config.json left out.

The trainer's resume check (vitjax/rundir.py `check_config`), the sweep's staleness and seed groups
(vitjax/sweep/) and `vitjax train`'s finished-run check all compare through `differing_keys`, so one
rule decides what counts as a changed config.
"""
import functools
import json

import ml_collections

from vitjax import config as config_layer
from vitjax import xla_cpu


def flatten(tree: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}} -> {'a.b': 1}: configs compared and tabulated key by key."""
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


ABSENT = "<absent>"


def same_value(a, b) -> bool:
    """Equal as JSON: config.json holds lists where a config has tuples, and NaN (an override of a run
    meant to fail) must equal itself."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# Config keys that say how a run executes, not what it computes: they may change between attempts of
# one run (add a compilation cache or a profiler window to resume with) and are never a difference.
RUNTIME_KEYS = ("compilation_cache_dir", "profile_steps", "keep_checkpoint_steps", "evals")


def differing_keys(old: dict, new: dict) -> dict[str, tuple]:
    """{flattened key: (old value, new value)} for each key whose value differs between two configs.

    A key that one side lacks counts as its default in the schema (vitjax/config.py): a run recorded
    before vitjax gained a key ran as that key's default does (keys are added with the old behaviour
    as their default), so a new key does not make every earlier run a different config. RUNTIME_KEYS
    are not compared.
    """
    old, new = flatten(old), flatten(new)
    defaults = _schema_defaults()
    found = {}
    for key in sorted(key for key in old.keys() | new.keys() if key.split(".")[0] not in RUNTIME_KEYS):
        was, wanted = old.get(key, defaults.get(key, ABSENT)), new.get(key, defaults.get(key, ABSENT))
        if not same_value(was, wanted) and not _legacy_fill(key, was, wanted):
            found[key] = (old.get(key, ABSENT), new.get(key, ABSENT))
    return found


def _legacy_fill(key: str, was, wanted) -> bool:
    """Whether one side holds what an older vitjax wrote into a CPU run's config.json as a runtime
    choice (xla_cpu.LEGACY_CONFIG_FILLS) and the other has no value for it."""
    fill = xla_cpu.LEGACY_CONFIG_FILLS.get(key, ABSENT)
    return fill is not ABSENT and ABSENT in (was, wanted) and (same_value(was, fill) or same_value(wanted, fill))


def with_schema_defaults(flat: dict) -> dict:
    """A flattened config with the schema's default for each key it lacks, and without what an older
    vitjax wrote into it as a runtime choice: `differing_keys`' rule, for code that compares configs by
    value (the sweep's seed groups), so that a run of today and an older one of the same config and another
    seed fall into one group."""
    return {**_schema_defaults(), **without_legacy_fills(flat)}


def without_legacy_fills(flat: dict) -> dict:
    """A flattened config without the keys that hold xla_cpu.LEGACY_CONFIG_FILLS' value (`_legacy_fill`:
    such a value and no value are the same config)."""
    fills = xla_cpu.LEGACY_CONFIG_FILLS
    return {key: value for key, value in flat.items() if not (key in fills and same_value(value, fills[key]))}


@functools.cache
def _schema_defaults_cached() -> str:
    return json.dumps(flatten(config_to_dict(config_layer.base())))


def _schema_defaults() -> dict:
    return json.loads(_schema_defaults_cached())


def config_changes(old: dict, new: dict) -> list[str]:
    """'key: old -> new' for each key `differing_keys` finds."""
    return [f"{key}: {was!r} -> {wanted!r}" for key, (was, wanted) in differing_keys(old, new).items()]


def config_to_dict(config: ml_collections.ConfigDict) -> dict:
    return json.loads(config.to_json_best_effort(sort_keys=True))
