"""Few-shot linear evaluation (ViT paper, Fig. 4 and Table 2's "few-shot" rows).

Freeze the model, take its pre-logit features (the vector the head reads: the CLS token or pooled
tokens for ViT, the pooled last stage for BiT, both sown as `intermediates['pre_logits']`), then for
k = 1, 5, 10, 25 examples per class fit a closed-form regularised least-squares classifier to {-1, +1}
targets and report its test accuracy, averaged over several random draws of the k-shot set.

Ridge regression, not logistic regression, because its solution is one linear solve: the probe is
cheap, deterministic and has no optimiser settings to tune. The L2 strength is chosen per draw by
exact leave-one-out error on the k-shot set itself (the test set never chooses it), from the SVD of
the centred features, which gives the whole regularisation path for the price of one decomposition.

Where the examples come from: the k-shot sets are drawn from the *whole* train split of the run's
dataset (not the run's `train_size` subset), and accuracy is measured on its test split; both can be
moved to another dataset (`--fewshot_data`, as the paper probes ImageNet-21k models on ImageNet-1k).
Like that probe, its training examples may overlap the pre-training set; the test examples never do.

Two probes per run: 'fewshot' (fewshot.json, usually the run's own data) and 'transfer' (transfer.json,
`--probe transfer`), e.g. a model pre-trained on classes A (data.classes) probed on classes B with
`--fewshot_data '{"classes": [5, 6, 7, 8, 9]}'`: the pool is B's train split, the score is on B's test
split. The features are the pre-logits, so the head's class count never meets the probe's.
Each result file holds '<k>shot' (mean accuracy over the draws) and '<k>shot_std' (their population
std), the draws ('seeds'), the probe's classes and how many test images of each class it scored.
"""
import dataclasses
import json
import time

import numpy as np

DEFAULT_SHOTS = (1, 5, 10, 25)
DEFAULT_SEEDS = 3
# Relative L2 strengths: multiplied by the mean squared singular value, so the grid does not depend on
# the scale or dimension of the features.
L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
# The probes a run can have (their files: vitjax/rundir.py PROBE_FILES): in-domain, and transfer.
PROBES = ("fewshot", "transfer")


# --- The linear algebra ------------------------------------------------------------------------

@dataclasses.dataclass
class RidgeClassifier:
    mean: np.ndarray  # feature mean of the training set, [d]
    weights: np.ndarray  # [d, classes]
    bias: np.ndarray  # [classes]
    l2: float  # the absolute L2 strength chosen

    def predict(self, features) -> np.ndarray:
        scores = (np.asarray(features, np.float64) - self.mean) @ self.weights + self.bias
        return np.argmax(scores, axis=1)


def _centred_svd(features, targets):
    x, y = np.asarray(features, np.float64), np.asarray(targets, np.float64)
    mean, target_mean = x.mean(axis=0), y.mean(axis=0)
    u, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    return mean, target_mean, u, s, vt, u.T @ (y - target_mean)


def leave_one_out_errors(features, targets, l2_values) -> np.ndarray:
    """Mean squared leave-one-out residual of ridge regression (unpenalised bias) for each absolute L2.

    With the centred features' thin SVD Xc = U S V^T, the hat matrix for strength l is
    H = 1/n + U diag(s^2 / (s^2 + l)) U^T, and the leave-one-out residual of example i is
    (y_i - yhat_i) / (1 - H_ii): exact, with no refitting.
    """
    targets = np.asarray(targets, np.float64)
    n = len(targets)
    _, target_mean, u, s, _, uty = _centred_svd(features, targets)
    errors = []
    for l2 in l2_values:
        shrink = s ** 2 / (s ** 2 + l2)
        fitted = u @ (shrink[:, None] * uty) + target_mean
        leverage = 1.0 / n + np.einsum("ij,j,ij->i", u, shrink, u)
        residuals = (targets - fitted) / np.maximum(1.0 - leverage, 1e-12)[:, None]
        errors.append(float(np.mean(residuals ** 2)))
    return np.asarray(errors)


def fit_ridge(features, labels, num_classes: int, *, l2: float | None = None,
              l2_grid=L2_GRID) -> RidgeClassifier:
    """Ridge regression onto 2*onehot-1 with an unpenalised bias (centring does that).

    `l2=None` picks the strength from `l2_grid` (relative to the mean squared singular value of the
    centred features, so the grid is scale-free) by the smallest leave-one-out error; the fit itself is
    W = V diag(s / (s^2 + l)) U^T Yc.
    """
    labels = np.asarray(labels)
    if len(labels) < 2:
        raise ValueError(f"a few-shot fit needs at least 2 examples, got {len(labels)}")
    targets = 2.0 * np.eye(num_classes)[labels] - 1.0
    mean, target_mean, _, s, vt, uty = _centred_svd(features, targets)
    if l2 is None:
        candidates = [r * (float(np.mean(s ** 2)) or 1.0) for r in l2_grid]
        l2 = candidates[int(np.argmin(leave_one_out_errors(features, targets, candidates)))]
    weights = vt.T @ ((s / (s ** 2 + l2))[:, None] * uty)
    return RidgeClassifier(mean=mean, weights=weights, bias=target_mean, l2=float(l2))


def draw_shots(labels, shots: int, num_classes: int, seed: int) -> np.ndarray:
    """Indices of `shots` examples of every class, drawn without replacement by `seed`."""
    labels = np.asarray(labels)
    rng = np.random.default_rng([seed, shots])
    picked = []
    for k in range(num_classes):
        members = np.flatnonzero(labels == k)
        if len(members) < shots:
            raise ValueError(f"{shots}-shot needs {shots} examples of class {k}, the pool has {len(members)}")
        picked.append(rng.choice(members, size=shots, replace=False))
    return np.concatenate(picked)


def evaluate_features(pool_features, pool_labels, test_features, test_labels, num_classes: int, *,
                      shots=DEFAULT_SHOTS, seeds: int = DEFAULT_SEEDS) -> dict:
    """{'<k>shot': mean accuracy, '<k>shot_std': std over seeds} for each k, from precomputed features."""
    test_labels = np.asarray(test_labels)
    results = {}
    for k in shots:
        accuracies = []
        for seed in range(seeds):
            idx = draw_shots(pool_labels, k, num_classes, seed)
            classifier = fit_ridge(np.asarray(pool_features)[idx], np.asarray(pool_labels)[idx], num_classes)
            accuracies.append(float(np.mean(classifier.predict(test_features) == test_labels)))
        results[f"{k}shot"] = float(np.mean(accuracies))
        results[f"{k}shot_std"] = float(np.std(accuracies))
    return results


# --- Features of a trained model ---------------------------------------------------------------

def feature_fn(model):
    """A jitted params, images -> pre-logit features [batch, d] (inference mode, nothing updated)."""
    import jax

    def features(params, images):
        _, state = model.apply({"params": params}, images, train=False, mutable=["intermediates"])
        return state["intermediates"]["pre_logits"][0]  # sow appends to a tuple: one call, one entry

    return jax.jit(features)


def collect(features, params, batches, *, num_classes: int, per_class: int | None = None,
            max_examples: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of eval batches (padding rows dropped), stopping early once every class has
    `per_class` examples or `max_examples` have been seen, so a big split is not encoded in full."""
    kept_features, kept_labels, counts = [], [], np.zeros(num_classes, np.int64)
    for batch in batches:
        mask = np.asarray(batch["mask"], bool)
        feats = np.asarray(features(params, batch["image"]))[mask]
        labels = np.asarray(batch["label"])[mask]
        kept_features.append(feats.astype(np.float32))
        kept_labels.append(labels)
        counts += np.bincount(labels, minlength=num_classes)[:num_classes]
        total = int(counts.sum())
        if per_class is not None and counts.min() >= per_class:
            break
        if max_examples is not None and total >= max_examples:
            break
    if not kept_features:
        raise ValueError("no examples to compute few-shot features on (empty split)")
    features_array, labels_array = np.concatenate(kept_features), np.concatenate(kept_labels)
    if max_examples is not None:
        features_array, labels_array = features_array[:max_examples], labels_array[:max_examples]
    return features_array, labels_array


def fewshot_workdir(workdir: str, checkpoint: str | None = None, *, shots=DEFAULT_SHOTS,
                    seeds: int = DEFAULT_SEEDS, max_test_examples: int | None = None,
                    data_overrides: dict | None = None, batch_size: int | None = None,
                    probe: str = "fewshot") -> dict:
    """Few-shot accuracies of a run's newest (or the given) checkpoint; also written to the run's
    probe's file (rundir.PROBE_FILES: fewshot.json, or transfer.json for probe='transfer').

    `data_overrides` change the run's data config for the probe, e.g. {'name': 'imagenet2012',
    'test_split': 'validation'} to probe an ImageNet-21k model on ImageNet-1k as the paper does; the
    probe data's pp_eval must give the model's input size.
    """
    from vitjax import data, rundir
    from vitjax.evaluate import features as features_lib
    from vitjax.checkpoints import locations, reader

    start = time.time()
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {PROBES}, got {probe!r}")
    shots = tuple(sorted({int(k) for k in shots}))
    if not shots or shots[0] < 1 or seeds < 1:
        raise ValueError(f"few-shot needs shots >= 1 and seeds >= 1, got shots={shots}, seeds={seeds}")
    run_dir = locations.locate(workdir).run_dir
    config = rundir.load_config(run_dir)
    probe_data = {**config.data.to_dict(), **(data_overrides or {})}
    probe_data.update(train_size=None, class_balanced=False)  # the whole train split, see the module docstring
    num_classes = data.get_info(probe_data).num_classes
    # The frozen features of any run, as the k-NN takes them: a classifier's pre-logits, an MAE's
    # encoder, a DINO backbone; in float32, so the least-squares fit sees no bfloat16 rounding.
    model, params = features_lib.feature_model(
        config, reader.read_params(checkpoint or workdir), num_classes)
    results = scores(feature_fn(model), params, probe_data, num_classes, shots=shots, seeds=seeds,
                     max_test=max_test_examples, batch_size=batch_size or config.eval_batch_size)
    results.update(shots=list(shots), seeds=seeds, data=probe_data["name"], seconds=time.time() - start,
                   probe=probe, classes=list(probe_data.get("classes") or range(num_classes)))
    rundir.write_report(run_dir, rundir.PROBE_FILES[probe][0], results)
    return results


def scores(encode, params, probe_data: dict, num_classes: int, *, shots, seeds: int, max_test: int | None,
           batch_size: int, split: str = "test") -> dict:
    """'<k>shot' and '<k>shot_std' for each k of the features `encode(params, images)`: k-shot sets drawn
    from a pool of `probe_data`'s train images, scored on its first `max_test` images of `split` (all: None);
    with the example counts, the feature size and the test images of each class. `vitjax eval --fewshot`
    and the evaluation during training (vitjax/evaluate/in_training.py)."""
    from vitjax import data

    # A pool of a few times the largest k per class, so that the seeds draw different k-shot sets.
    per_class = max(4 * max(shots), max(shots) + 10)
    pool = collect(encode, params, data.eval_batches(probe_data, split="train", global_batch_size=batch_size),
                   num_classes=num_classes, per_class=per_class)
    test = collect(encode, params, data.eval_batches(probe_data, split=split, global_batch_size=batch_size),
                   num_classes=num_classes, max_examples=max_test)
    results = evaluate_features(*pool, *test, num_classes, shots=shots, seeds=seeds)
    return {**results, "pool_examples": len(pool[0]), "test_examples": len(test[0]),
            "feature_dim": int(pool[0].shape[1]),
            "test_per_class": np.bincount(test[1], minlength=num_classes).tolist()}


# --- `vitjax eval --fewshot` ------------------------------------------------------------------------

def add_args(parser) -> None:
    """Adds the few-shot options to `vitjax eval`'s argparse parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--fewshot", action="store_true", help="also run the few-shot linear probe")
    group.add_argument("--fewshot_only", action="store_true",
                       help="run only the few-shot linear probe (not the test-set accuracy)")
    parser.add_argument("--shots", default=",".join(map(str, DEFAULT_SHOTS)),
                        help="examples per class of the few-shot probe, comma-separated")
    parser.add_argument("--fewshot_seeds", type=int, default=DEFAULT_SEEDS,
                        help="random draws of each k-shot training set; accuracies are averaged")
    parser.add_argument("--fewshot_max_test", type=int, default=None,
                        help="score the probe on only the first N test examples (default: all)")
    parser.add_argument("--fewshot_data", default=None, metavar="JSON",
                        help='probe another dataset: changes to the run\'s data config as JSON, e.g. '
                             '\'{"name": "imagenet2012", "test_split": "validation"}\'')
    parser.add_argument("--probe", choices=PROBES, default="fewshot",
                        help="which of the run's probes this is: its results go to fewshot.json or transfer.json")


def settings_from_args(args) -> dict | None:
    if not (args.fewshot or args.fewshot_only):
        return None
    try:
        shots = tuple(int(k) for k in args.shots.split(",") if k.strip())
    except ValueError:
        raise ValueError(f"--shots must be comma-separated integers such as 1,5,10,25, got {args.shots!r}") from None
    overrides = None
    if args.fewshot_data:
        try:
            overrides = json.loads(args.fewshot_data)
        except json.JSONDecodeError as error:
            raise ValueError(f"--fewshot_data must be a JSON object, got {args.fewshot_data!r}: {error}") from None
        if not isinstance(overrides, dict):
            raise ValueError(f"--fewshot_data must be a JSON object (a dict), got {args.fewshot_data!r}")
    return {"shots": shots, "seeds": args.fewshot_seeds, "max_test_examples": args.fewshot_max_test,
            "data_overrides": overrides, "probe": args.probe}
