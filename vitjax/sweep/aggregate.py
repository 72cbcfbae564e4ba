"""Runs averaged over training seeds, and paired differences between model families.

A sweep repeats each setting with several training seeds (config `seed` and `data.subset_seed` both set
to the seed, so model families see the same subsets seed by seed). `groups` gathers the finished runs
whose configs are equal except for those two keys, the inputs paired with them (SEED_PAIRED_KEYS: a
DeiT student's teacher of its own seed), how a run reached its steps (TRAJECTORY_KEYS: branched off a
trunk or not) and `mesh.*` (the device layout) into one group, by the configs recorded in the table's
rows, never by run names, so a run named anything still lands in its setting's group. Each group (a row of DIR/summary.csv) holds

    family, model, patch_size, train_size, params, flops_per_step   shared by the group's runs
    train_flops, examples_seen, steps, img_per_sec                  means over the group's runs
    n, seeds, runs                                                  how many runs, their seeds and names
    <metric>_mean, _std, _min, _max                                 for accuracy, best_val_accuracy,
                                                                    test_accuracy and few-shot accuracies
    <probe>_<k>shot_draws_std                                       the mean over runs of each run's std
                                                                    over the probe's draws
    accuracy_from                                                   'best_val', 'final' (or 'mixed')

`accuracy` is test accuracy at the best validation step where the runs had a validation split, else at
the final step (table.py). `_std` is the sample standard deviation (ddof=1): NaN, an empty CSV cell, for
a group of one run.

`paired_difference` compares two groups seed by seed (e.g. BiT minus ViT at 55k examples): only seeds
both have count, so a seed one family lacks cannot shift the comparison.
"""
import copy
import json
import math
import re
import statistics

from vitjax.config_compare import flatten, with_schema_defaults

SEED_KEYS = ("seed", "data.subset_seed")  # what differs between the runs of one group
# Inputs a sweep pairs with the seed (the student of seed s learns from the teacher trained on seed s's
# subset): they differ between a group's runs as the seed does. Two of a group's runs with one seed and
# different such inputs are an error (`groups`), never averaged.
SEED_PAIRED_KEYS = ("distillation.teacher",)
# How a run reached its steps, not what it trained: a rung branched off a trunk's checkpoint trains what
# the same config trains from step zero (tests/train/test_branch.py), so a seed's branched rung and
# another seed's unbranched run of one budget are one group.
TRAJECTORY_KEYS = ("branch_from", "keep_checkpoint_steps")
METRICS = ("accuracy", "best_val_accuracy", "test_accuracy")
SHARED = ("family", "model", "patch_size", "train_size", "params", "flops_per_step", "image_shape")
MEANS = ("train_flops", "examples_seen", "steps", "img_per_sec")
STATS = ("mean", "std", "min", "max")


def comparable(config: dict | None) -> dict:
    """A run's config flattened for comparison by value: a key it lacks counts as its schema default (a
    run recorded before vitjax gained the key ran as the default does)."""
    return with_schema_defaults(flatten(config or {}))


def group_key(config: dict) -> str:
    """What runs of one group share: the comparable config without the seed keys and mesh.*."""
    flat = comparable(config)
    kept = {k: v for k, v in flat.items()
            if k not in SEED_KEYS + SEED_PAIRED_KEYS + TRAJECTORY_KEYS and not k.startswith("mesh.")}
    return json.dumps(kept, sort_keys=True, default=str)


# A few-shot probe's mean accuracy over its draws at k shots: the in-domain probe's and the transfer probe's.
SHOT_COLUMN = re.compile(r"(fewshot|transfer)_(\d+)shot")


def shot_columns(rows) -> list[str]:
    """The probes' accuracy columns the rows have: fewshot_<k>shot, then transfer_<k>shot, by k."""
    found = {m.groups() for r in rows for k in r if (m := SHOT_COLUMN.fullmatch(k))}
    return [f"{probe}_{k}shot" for probe, k in sorted(found, key=lambda pk: (pk[0], int(pk[1])))]


def metrics_of(rows) -> list[str]:
    """METRICS, then the few-shot accuracies the rows have (fewshot_5shot, ..., transfer_5shot, ...)."""
    return list(METRICS) + shot_columns(rows)


def spread(values) -> dict:
    """mean, sample std (ddof=1; NaN for one value), min and max of the values that are not None;
    every one None when there are none."""
    values = [float(v) for v in values if v is not None]
    if not values:
        return dict.fromkeys(STATS)
    std = statistics.stdev(values) if len(values) > 1 else math.nan
    return {"mean": statistics.fmean(values), "std": std, "min": min(values), "max": max(values)}


def _mean(values):
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _config_without_seeds(config: dict) -> dict:
    """The group's config: a member's, without the keys that differ between members."""
    config = copy.deepcopy(config or {})
    for dotted in SEED_KEYS + SEED_PAIRED_KEYS + TRAJECTORY_KEYS:
        *parents, leaf = dotted.split(".")
        node = config
        for part in parents:
            node = node.get(part, {})
        node.pop(leaf, None)
    return config


def summarise(members: list[dict], metrics) -> dict:
    """One group's summary (see the module docstring) from its runs' table rows."""
    members = sorted(members, key=lambda r: (r.get("seed") is None, r.get("seed") or 0, r["name"]))
    first = members[0]
    group = {key: first.get(key) for key in SHARED}
    group.update({key: _mean(r.get(key) for r in members) for key in MEANS})
    group.update(n=len(members), seeds=[r.get("seed") for r in members], runs=[r["name"] for r in members])
    for metric in metrics:
        for stat, value in spread(r.get(metric) for r in members).items():
            group[f"{metric}_{stat}"] = value
        if SHOT_COLUMN.fullmatch(metric):
            group[f"{metric}_draws_std"] = _mean(r.get(f"{metric}_std") for r in members)
    sources = {r.get("accuracy_from") for r in members}
    group["accuracy_from"] = sources.pop() if len(sources) == 1 else "mixed"
    group["config"] = _config_without_seeds(first.get("config"))
    return group


def _check_seed_pairing(members: list[dict]) -> None:
    """Raises ValueError when two runs of one group share a seed but not their seed-paired inputs."""
    inputs = {}
    for row in members:
        flat = flatten(row.get("config") or {})
        paired = tuple(flat.get(key) for key in SEED_PAIRED_KEYS)
        if inputs.setdefault(row.get("seed"), (row["name"], paired))[1] != paired:
            other = inputs[row.get("seed")][0]
            raise ValueError(f"{other} and {row['name']} have one config and seed {row.get('seed')} but different "
                             f"{' / '.join(SEED_PAIRED_KEYS)}: two arms in one group; give them different configs "
                             f"(e.g. distillation.model) or tabulate them as separate sweeps")


def groups(rows: list[dict]) -> list[dict]:
    """The finished runs with an accuracy, grouped over seeds and summarised; sorted by family, model
    and train_size."""
    finished = [r for r in rows if r.get("status") == "finished" and r.get("accuracy") is not None]
    found = {}
    for row in finished:
        found.setdefault(group_key(row.get("config")), []).append(row)
    for members in found.values():
        _check_seed_pairing(members)
    metrics = metrics_of(finished)
    summaries = [summarise(members, metrics) for members in found.values()]
    return sorted(summaries, key=lambda g: (str(g["family"]), str(g["model"]), g["train_size"] or 0))


def columns(summaries: list[dict]) -> list[str]:
    """summary.csv's columns."""
    summarised = [key[:-len("_mean")] for key in (summaries[0] if summaries else {}) if key.endswith("_mean")]
    metrics = [m for m in summarised if any(g.get(f"{m}_mean") is not None for g in summaries)]
    return ["family", "model", "patch_size", "train_size", "n", "seeds",
            *[f"{m}_{stat}" for m in metrics for stat in _stats(m)], "accuracy_from",
            "params", "flops_per_step", "train_flops", "examples_seen", "steps", "img_per_sec", "runs"]


def _stats(metric: str) -> tuple:
    """summary.csv's statistics of `metric`: STATS over seeds, and for a probe's, the mean std over draws."""
    return STATS + (("draws_std",) if SHOT_COLUMN.fullmatch(metric) else ())


def csv_row(group: dict) -> dict:
    """A group as summary.csv writes it: seeds and runs space-separated, NaN as an empty cell."""
    out = {k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in group.items()}
    out["seeds"] = " ".join(str(s) for s in group["seeds"])
    out["runs"] = " ".join(group["runs"])
    return out


def by_seed(rows: list[dict], metric: str) -> dict:
    """{seed: value} of the rows (one group's runs); a seed twice in one group is an error."""
    values = {}
    for row in rows:
        if row.get(metric) is None:
            continue
        if row.get("seed") in values:
            raise ValueError(f"seed {row.get('seed')} appears twice ({row['name']} and another run): pairing "
                             f"by seed needs one run per seed")
        values[row.get("seed")] = float(row[metric])
    return values


def paired_difference(first: list[dict], second: list[dict], metric: str = "accuracy") -> dict:
    """`first` minus `second` (two groups' table rows), seed by seed over the seeds both have:
    {'seeds', 'differences', 'mean', 'std' (ddof=1; NaN for one pair), 'n'}."""
    a, b = by_seed(first, metric), by_seed(second, metric)
    seeds = sorted(set(a) & set(b), key=lambda s: (s is None, s))
    differences = [a[s] - b[s] for s in seeds]
    summary = spread(differences)
    return {"metric": metric, "seeds": seeds, "differences": differences, "mean": summary["mean"],
            "std": summary["std"], "n": len(seeds)}


def members(rows: list[dict], family: str, train_size: int) -> list[dict]:
    """The finished rows of `family` at `train_size`, which must form one group (else ValueError)."""
    found = {}
    for row in rows:
        if row.get("status") == "finished" and row.get("family") == family and row.get("train_size") == train_size:
            found.setdefault(group_key(row.get("config")), []).append(row)
    if len(found) != 1:
        raise ValueError(f"{len(found)} groups of family {family!r} at train_size {train_size} (runs: "
                         f"{[[r['name'] for r in g] for g in found.values()]}); pair groups explicitly with "
                         f"paired_difference")
    return next(iter(found.values()))


def family_difference(rows: list[dict], family: str, other: str, train_size: int, metric: str = "accuracy") -> dict:
    """`family` minus `other` at `train_size`, seed by seed: e.g. ('bit', 'vit', 55000) for "BiT minus ViT
    at 55k". Each family must have one group at that size; paired_difference pairs any two groups."""
    return paired_difference(members(rows, family, train_size), members(rows, other, train_size), metric)
