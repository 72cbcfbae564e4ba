r"""Decides issue 40 item 6's pre-registered read-outs (S1-S3: sigmoid vs softmax against batch size; L1-L4:
LiT against both towers from scratch) from the runs of experiments/contrastive.py.

    for d in runs/contrastive/*_s[0-9]; do vitjax eval --workdir $d --checkpoint $d/checkpoint_best --captions; done
    python experiments/contrastive_readouts.py runs/contrastive [more sweep dirs] \
        --out experiments/results/contrastive/readouts.json

The metric is zero-shot accuracy on the test pairs whose colour-item pair no training pair had
(`zero_shot_held_out` of captions_eval.json, in points), scored at each run's best-validation step: a
captions_eval.json of another checkpoint is refused (the choice of step is validation's alone). Each
read-out is Q > 0 predicted, Q a signed sum of arms' accuracies paired by seed, decided by
experiments/readouts.py's rule under both thresholds: tau = max(2 SE, FLOOR) and tau_t =
max(t(0.975, n-1) SE, FLOOR); holds when Q > tau, fails when Q < -tau, else inconclusive; S3 is an
"at least" read-out (holds when Q > -tau). A read-out is decided once each of its terms has >= 2 seeds.
Tests: `python -m pytest tests/sweep/test_contrastive_readouts.py`.
"""
import argparse
import json
import os
import sys

from vitjax import rundir
from vitjax.checkpoints.locations import BEST_CHECKPOINT as BEST
from vitjax.config import load_module
from vitjax.evaluate.caption_evals import REPORT
from vitjax.sweep import table

_HERE = os.path.dirname(os.path.abspath(__file__))
readouts = load_module(os.path.join(_HERE, "readouts.py"))
sweep = load_module(os.path.join(_HERE, "contrastive.py"))

# Points. Held-out pairs are ~27% of the 10,000 test pairs (~2,700): one accuracy's binomial SE near 20% is
# ~0.8 points, so a difference under 1 point is within what the test draw alone moves.
FLOOR = 1.0
METRIC = "zero_shot_held_out"


def run_values(sweep_dirs, names) -> dict:
    """{run name: {'held_out': points, 'seen': points, 'seed', 'pair_key'}} of the finished, evaluated runs
    named `names` in `sweep_dirs`; a name finished in two of them is an error (which to count would be a
    choice made after the results)."""
    found, where = {}, {}
    for sweep_dir in sweep_dirs:
        for name in names:
            run = os.path.join(sweep_dir, name)
            results, scores = rundir.read_results(run), rundir.read_json(run, REPORT)
            if results is None or scores is None:
                continue
            if name in found:
                raise ValueError(f"{name} finished in {where[name]} and {sweep_dir}: keep one of them")
            if BEST not in os.path.normpath(scores["checkpoint"]).split(os.sep):
                raise ValueError(f"{run}/{REPORT} scored {scores['checkpoint']!r}, not the best-validation step: "
                                 f"run `vitjax eval --workdir {run} --checkpoint {run}/checkpoint_best --captions`")
            where[name] = sweep_dir
            found[name] = {"held_out": 100 * scores[METRIC], "seen": 100 * scores["zero_shot_seen"],
                           "seed": int(name.rsplit("_s", 1)[1]), "pair_key": table.pair_key(results)}
    return found


def _by_seed(runs: dict, name_of) -> dict:
    """{seed: held-out points} of the runs `name_of(seed)` names."""
    return {seed: runs[name_of(seed)]["held_out"] for seed in sweep.SEEDS if name_of(seed) in runs}


def batch_arm(sweep_dirs) -> dict:
    """S1-S3 from the `batch_s<seed>` parts."""
    names = [sweep.batch_name(loss, b, s) for loss in sweep.LOSSES for b in sweep.BATCHES for s in sweep.SEEDS]
    runs = run_values(sweep_dirs, names)
    readouts.check_pairable(list(runs.values()))
    small, large = min(sweep.BATCHES), max(sweep.BATCHES)

    def advantage(batch) -> list:
        return [(1, _by_seed(runs, lambda s: sweep.batch_name("sigmoid", batch, s))),
                (-1, _by_seed(runs, lambda s: sweep.batch_name("softmax", batch, s)))]

    terms = {"S1": advantage(small),
             "S2": advantage(small) + [(-c, v) for c, v in advantage(large)],
             "S3": advantage(large)}
    return _decided(terms, at_least=("S3",))


def lit_arm(sweep_dirs) -> dict:
    """L1-L4 from the `lit` part."""
    runs = run_values(sweep_dirs, [sweep.lit_name(arm, s) for arm in sweep.ARMS for s in sweep.SEEDS])
    readouts.check_pairable(list(runs.values()))

    def arm(name) -> dict:
        return _by_seed(runs, lambda s: sweep.lit_name(name, s))

    terms = {"L1": [(1, arm("vit")), (-1, arm("scratch"))],
             "L2": [(1, arm("mae")), (-1, arm("scratch"))],
             "L3": [(1, arm("dino")), (-1, arm("scratch"))],
             "L4": [(1, arm("vit")), (-1, arm("dino"))]}
    return _decided(terms)


def _decided(terms: dict, at_least=()) -> dict:
    return {name: readouts.decide(readouts.combine(parts), at_least=name in at_least, floor=FLOOR)
            for name, parts in terms.items() if min(len(values) for _, values in parts) >= 2}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dirs", nargs="+", help="directories holding experiments/contrastive.py's runs")
    parser.add_argument("--out", help="write the decided read-outs here as JSON")
    args = parser.parse_args(argv)
    try:
        decided = {**batch_arm(args.sweep_dirs), **lit_arm(args.sweep_dirs)}
    except ValueError as error:
        sys.exit(f"contrastive_readouts: error: {error}")
    for name, r in decided.items():
        tau_t = "n/a" if r["tau_t"] is None else f"{r['tau_t']:.2f}"
        print(f"{name}: Q = {r['q']:+.2f} (SE {r['se']:.2f}; {r['how']}), tau {r['tau']:.2f} -> {r['verdict']}; "
              f"tau_t {tau_t} -> {r['verdict_t']}")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(decided, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
