r"""Paired seeds where they would likely decide a read-out (issue 36, item 4): the 8-epoch read-outs that
3-4 paired seeds would likely decide under the t-based rule (experiments/README.md, "Seeds where they
decide") get one or two more seeds, every term of a new seed trained here.

    vitjax sweep experiments/decide_seeds.py:part=w --workdir runs/decide_seeds            # W1, W2
    vitjax sweep experiments/decide_seeds.py:part=s2 --workdir runs/decide_seeds           # S2
    vitjax sweep experiments/decide_seeds.py:part=u --workdir runs/decide_seeds            # U2, U3 (DINO)
    vitjax sweep experiments/decide_seeds.py:part=t --workdir runs/decide_seeds            # T1, with its probes
    vitjax sweep experiments/decide_seeds.py:part=d1_teachers --workdir runs/decide_seeds  # D1's teachers
    for n in 550 1700 55000; do    # each teacher at its best-validation step, as swin_deit.py reads it
      vitjax export runs/decide_seeds/bit_n${n}_s3/checkpoint_best \
          --out experiments/results/deit_teachers/bit_n${n}_s3.npz; done
    vitjax sweep experiments/decide_seeds.py:part=d1 --workdir runs/decide_seeds           # D1
    python experiments/readouts.py --data_scaling experiments/results/data_scaling \
        --swin experiments/results/swin --self_supervised experiments/results/self_supervised \
        --deit experiments/results/deit --transfer experiments/results/transfer \
        --patch_size experiments/results/patch_size --added_seeds runs/decide_seeds

No config is written here: each run is a run another sweep file registers (swin_deit.py, patch_size.py,
self_supervised.py, transfer.py, data_scaling.py for the plain ViT and BiT the arms pair with), taken
from its get_runs at seed 0 and re-seeded (`reseeded`): the seed and the subset draw (the two keys
protocol.overrides sets to the seed) and a DeiT student's teacher (the BiT of its own seed) change,
nothing else. New seeds take indices no committed run has, so no name collides with a committed seed:
seed 3 for W1/W2, U2/U3 (DINO), D1 and S2 (their arms have seeds 0-2 at <= 5.5k), seeds 2 and 3 for T1
(transfer.py has 0-1). Seeds are independent draws, so a skipped index changes nothing; readouts.py
pairs each read-out over the seeds all its terms have.

Pairs within one host and code (readouts.check_pairable): the committed seeds' runs trained on other
hosts, so a new seed trains all its terms here, the plain-arm controls included, and **every part runs
on one host from one worktree of one commit** (their `pair_key`s must match: the controls are shared).
Parts share one workdir: a control two parts train (vit_n550_s3 in w, u and d1; bit_n550_s3 in u and
d1_teachers) has the same overrides in each (one function makes them), so the second part finds it
finished. T1's runs are prefixed `transfer_` (transfer.py names them like the plain arm's).

Parts (each one sitting on 2 cores; estimates from the committed results.json's wall_seconds of the
same runs (hosts of 2026-12-01 to 03, partly loaded), 1,200-step runs unless 55k; shared controls in the
part that runs first, in the order above):
  w            Swin and the plain ViT at 550, 1.7k, 55k, seed 3 (W1 reads 550 and 1.7k, W2 also 55k).
               Swin 380-416 s, 1,008-1,091 s at 55k; ViT ~110-165 s, ~275-465 s at 55k: ~40-50 min.
  s2           The ViT with patch 2 and with patch 4 at 5.5k, seed 3: S2 reads patch_size.py's p2 against
               a patch-4 ViT of width 64 (committed: model_size.py's vit_w64_n5500, the same config);
               here patch_size.py's own vit_p4_n5500. p2 1,035-1,142 s, p4 324-399 s: ~25 min.
  u            The ViT fine-tuned from the DINO encoder at 550, 1.7k, 55k (self_supervised.py: one
               committed encoder, experiments/results/self_supervised/pretrained/dino_pretrain.npz,
               pre-trained once on seed 0 for every fine-tuning seed, so seed 3 loads the same file),
               the BiT at 550, 1.7k (U2) and the ViT at 550, 1.7k, 55k (U3), seed 3. Fine-tunes 191-201 s,
               524-526 s at 55k; BiT 349-383 s: ~28 min after part w (~40 min alone).
  t            transfer.py's ViT and BiT at 550 and 27.5k (the sizes T1 reads), seeds 2 and 3, with
               transfer.py's in-domain and transfer probes. ViT 341-343 s at 550 and 236-505 s at 27.5k,
               BiT 617-647 s and 763-818 s (two runs at a time then: an upper bound), and two probes of
               29-67 s after each run: ~70-85 min.
  d1_teachers  The plain BiT at 550, 1.7k, 55k, seed 3: D1's students' teachers (swin_deit.py hard-distils
               from the plain arm's BiT of the student's size and seed), exported as above.
               BiT 349-383 s, 932-944 s at 55k: ~16 min after part u (~28 min alone).
  d1           The DeiT student without augmentation (swin_deit.py:part=deit) at 550, 1.7k, 55k and the
               plain ViT controls, seed 3. Refuses to start while a teacher file is missing (`teachers=DIR`,
               default experiments/results/deit_teachers). Students 307-368 s, 843-904 s at 55k:
               ~25 min after part w (~40 min alone).
Read-outs W1, W2, U2, U3 (DINO), T1, D1 and S2 in experiments/README.md; the seeds were chosen by
`seeds_to_decide_t` from the committed seeds' spread, before any run of this file.
"""
import os
from typing import NamedTuple

from vitjax.config import load_module, parse_part_arg
from vitjax.sweep.aggregate import SEED_PAIRED_KEYS

_HERE = os.path.dirname(os.path.abspath(__file__))
_protocol = load_module(os.path.join(_HERE, "protocol.py"))
_swin_deit = load_module(os.path.join(_HERE, "swin_deit.py"))
_transfer = load_module(os.path.join(_HERE, "transfer.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "Seeds added where they decide a read-out: every term of a new seed on one host and code"
NEW_SEED = 3
TRANSFER_SEEDS = (2, 3)
SMALLEST = (550, 1_700)  # readouts.SMALLEST: W1, U2 and D1's small sizes
LARGE = 55_000
TEACHERS = "experiments/results/deit_teachers"


class Registered(NamedTuple):
    """Runs another sweep file registers: `file`'s get_runs(`arg`) runs named <prefix>_n<size>_s0."""
    file: str
    arg: str | None
    prefix: str
    sizes: tuple
    rename: str = ""  # put before the name where the registering file's names would collide here


def _plain(model: str, sizes: tuple) -> Registered:
    """The plain arm's ViT or BiT: the controls the arms pair with, one definition for every part."""
    return Registered("data_scaling.py", None, model, sizes)


def _parts(teachers: str) -> dict:
    """part: (its seeds, the registered runs it trains)."""
    with_55k = (*SMALLEST, LARGE)
    return {
        "w": ((NEW_SEED,), [Registered("swin_deit.py", "part=swin", "swin", with_55k), _plain("vit", with_55k)]),
        "s2": ((NEW_SEED,), [Registered("patch_size.py", None, f"vit_p{patch}", (5_500,)) for patch in (2, 4)]),
        "u": ((NEW_SEED,), [Registered("self_supervised.py", "part=finetune", "dino_ft", with_55k),
                            _plain("bit", SMALLEST), _plain("vit", with_55k)]),
        "t": (TRANSFER_SEEDS, [Registered("transfer.py", None, model, (_transfer.SIZES[0], _transfer.SIZES[-1]),
                                          rename="transfer_") for model in ("vit", "bit")]),
        "d1_teachers": ((NEW_SEED,), [_plain("bit", with_55k)]),
        "d1": ((NEW_SEED,), [Registered("swin_deit.py", f"part=deit,teachers={teachers}", "deit", with_55k),
                             _plain("vit", with_55k)]),
    }


def reseeded(run: tuple, seed: int, paired: dict | None = None) -> tuple:
    """Seed 0's `run` (name, config, overrides) as seed `seed`: the seed and the subset draw set to it,
    the name's `_s0` made `_s<seed>`; `paired` gives the new seed's inputs that go with the seed
    (aggregate.SEED_PAIRED_KEYS: a student's teacher), which must not stay seed 0's."""
    name, config, overrides = run
    if not name.endswith("_s0") or overrides.get("seed") != 0 or overrides.get("data.subset_seed") != 0:
        raise ValueError(f"{name}: not a seed-0 run of the protocol (seed and data.subset_seed 0, named _s0)")
    paired = paired or {}
    stale = sorted(key for key in SEED_PAIRED_KEYS if key in overrides and key not in paired)
    if stale:
        raise ValueError(f"{name}: {', '.join(stale)} goes with the seed; give seed {seed}'s")
    return f"{name[:-len('_s0')]}_s{seed}", config, {**overrides, "seed": seed, "data.subset_seed": seed, **paired}


def _seed_zero(source: Registered) -> list:
    """The seed-0 runs `source` names, one per size in its order."""
    registered = {name: (name, config, overrides) for name, config, overrides in
                  load_module(os.path.join(_HERE, source.file)).get_runs(source.arg)}
    names = [f"{source.prefix}_n{size}_s0" for size in source.sizes]
    missing = [name for name in names if name not in registered]
    if missing:
        raise ValueError(f"{source.file}:{source.arg or ''} registers no {', '.join(missing)}")
    return [registered[name] for name in names]


def _runs_of(source: Registered, seed: int, teachers: str) -> list:
    runs = []
    for run in _seed_zero(source):
        size = run[2]["data.train_size"]
        paired = {"distillation.teacher": _swin_deit.teacher(teachers, size, seed)} \
            if "distillation.teacher" in run[2] else None
        name, config, overrides = reseeded(run, seed, paired)
        runs.append((source.rename + name, config, overrides))
    return runs


def part_runs(part: str, teachers: str = TEACHERS) -> list:
    """The part's runs, seed by seed and size by size (a part stopped early leaves whole pairs)."""
    seeds, sources = _parts(teachers)[part]
    runs = [run for seed in seeds for source in sources for run in _runs_of(source, seed, teachers)]
    return sorted(runs, key=lambda run: (run[2]["seed"], run[2]["data.train_size"]))


def _check_teachers(runs: list) -> None:
    """Refuses part d1 while a student's teacher is missing: it is trained by part d1_teachers and exported."""
    for name, _, overrides in runs:
        path = overrides.get("distillation.teacher")
        if path and not os.path.exists(path):
            teacher = f"bit_n{overrides['data.train_size']}_s{overrides['seed']}"
            raise ValueError(f"{name}'s teacher {path} is missing: train it with `vitjax sweep "
                             f"experiments/decide_seeds.py:part=d1_teachers --workdir runs/decide_seeds`, then "
                             f"`vitjax export runs/decide_seeds/{teacher}/checkpoint_best --out {path}`")


def _arguments(arg):
    return parse_part_arg(arg, {part: ("teachers",) if part == "d1" else () for part in _parts(TEACHERS)},
                          part="", teachers=TEACHERS)


def get_runs(arg=None):
    args = _arguments(arg)
    runs = part_runs(args.part, args.teachers)
    if args.part == "d1":
        _check_teachers(runs)
    return runs


def _transfer_probe(name: str):
    """transfer.py's probe `name` for part t, whose runs T1 reads through it; no probe for the others."""
    return lambda arg=None: getattr(_transfer, name) if _arguments(arg).part == "t" else None


# Functions of the part (vitjax/sweep/spec.py): only T1's runs are probed.
FEWSHOT = _transfer_probe("FEWSHOT")
FEWSHOT_TRANSFER = _transfer_probe("FEWSHOT_TRANSFER")
