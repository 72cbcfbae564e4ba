"""The weighted k-NN classifier on frozen features of the DINO paper (Caron et al. 2021, Section 4.1 and
eval_knn.py; after Wu et al. 2018): for any run, DINO, MAE or supervised.

    vitjax eval --workdir runs/fashion_mnist_dino --knn_only          # writes knn.json in the run
    vitjax eval --workdir runs/fashion_mnist_vit --knn --knn_k 20,200

Every train and test image is encoded by the frozen model (`features.feature_model`: the vector a
classifier's head reads, DINO's backbone CLS output, MAE's encoder CLS output), and the features are
L2-normalised. A test image's k nearest train images by cosine similarity s each vote for their class
with weight exp(s / T); the class with the largest total wins (k = 20, T = 0.07: the paper's).
Ties between equal similarities at the k-th place are broken by train index (torch's topk leaves them
unspecified).

The train examples (the memory bank) are the dataset's whole train split (not the run's `train_size`
subset): the paper's protocol, features of the labelled set with no training at all. With
`--knn_train_size N --knn_subset_seed S` they are the class-balanced subset of N images that a run with
data.train_size=N, data.class_balanced and data.subset_seed=S trains on (the study's label-efficiency
question: what do N labels buy on frozen features?), written to knn_n<N>_s<S>.json. `--knn_max_train`
caps them for a quick look. Images pass through the run's pp_eval, no augmentation.
Tests: `python -m pytest tests/evaluate/test_knn.py`.
"""
import time

import numpy as np

DEFAULT_K = (20,)
TEMPERATURE = 0.07
CHUNK = 256  # test rows per similarity block: CHUNK x train floats at a time


def normalize(features) -> np.ndarray:
    """Rows divided by their L2 norm (at least 1e-12), in float32."""
    features = np.asarray(features, np.float32)
    return features / np.maximum(np.linalg.norm(features, axis=1, keepdims=True), 1e-12)


def votes(train_features, train_labels, test_features, num_classes: int, *, k: int = 20,
          temperature: float = TEMPERATURE) -> np.ndarray:
    """[test, classes]: the summed weights exp(s / T) of each test row's k most similar train rows,
    per class. Features are normalised here; similarity is their dot product."""
    train, test = normalize(train_features), normalize(test_features)
    labels = np.asarray(train_labels)
    k = min(k, len(train))
    totals = np.zeros((len(test), num_classes), np.float64)
    for start in range(0, len(test), CHUNK):
        similarity = test[start:start + CHUNK] @ train.T
        # The k largest, ties by the lower train index: a stable sort of the negated similarities.
        nearest = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
        weights = np.exp(np.take_along_axis(similarity, nearest, axis=1).astype(np.float64) / temperature)
        rows = np.repeat(np.arange(len(nearest)), k)
        np.add.at(totals[start:start + CHUNK], (rows, labels[nearest].ravel()), weights.ravel())
    return totals


def accuracy(train_features, train_labels, test_features, test_labels, num_classes: int, *, k: int = 20,
             temperature: float = TEMPERATURE) -> dict:
    """{'top1', and 'top5' with at least 5 classes}: the share of test rows whose class is among the
    classes with the most (the five most) votes."""
    scores = votes(train_features, train_labels, test_features, num_classes, k=k, temperature=temperature)
    ranked = np.argsort(-scores, axis=1, kind="stable")
    truth = np.asarray(test_labels)[:, None]
    result = {"top1": float(np.mean(ranked[:, 0] == truth[:, 0]))}
    if num_classes >= 5:
        result["top5"] = float(np.mean(np.any(ranked[:, :5] == truth, axis=1)))
    return result


def knn_workdir(workdir: str, checkpoint: str | None = None, *, ks=DEFAULT_K, temperature: float = TEMPERATURE,
                max_train: int | None = None, max_test: int | None = None, batch_size: int | None = None,
                train_size: int | None = None, subset_seed: int = 0) -> dict:
    """k-NN accuracies of a run's newest (or the given) checkpoint for each k; also written to the run's
    `rundir.knn_file(train_size, subset_seed)`. Results: 'knn_<k>_top1' (and '_top5'), with the example
    counts, the memory bank's subset and the temperature."""
    from vitjax import data, rundir
    from vitjax.evaluate import features as features_lib, fewshot
    from vitjax.checkpoints import locations, reader

    start = time.time()
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1 or not temperature > 0:
        raise ValueError(f"k-NN needs k >= 1 and a temperature > 0, got k={ks}, temperature={temperature}")
    run_dir = locations.locate(workdir).run_dir
    config = rundir.load_config(run_dir)
    if train_size is not None and train_size < 1:
        raise ValueError(f"--knn_train_size must be a positive number of images, got {train_size}")
    probe_data = {**config.data.to_dict(), "train_size": train_size, "class_balanced": train_size is not None,
                  "subset_seed": subset_seed}
    num_classes = data.get_info(probe_data).num_classes
    model, params = features_lib.feature_model(config, reader.read_params(checkpoint or workdir),
                                               num_classes)
    results = scores(fewshot.feature_fn(model), params, probe_data, num_classes, ks=ks, temperature=temperature,
                     max_train=max_train, max_test=max_test, batch_size=batch_size or config.eval_batch_size)
    results.update(k=list(ks), temperature=temperature, train_size=train_size,
                   subset_seed=subset_seed if train_size is not None else None, data=probe_data["name"],
                   seconds=time.time() - start)
    rundir.write_report(run_dir, rundir.knn_file(train_size, subset_seed), results)
    return results


def scores(encode, params, probe_data: dict, num_classes: int, *, ks, temperature: float, max_train: int | None,
           max_test: int | None, batch_size: int, split: str = "test") -> dict:
    """'knn_<k>_top1' (and '_top5') for each k of the features `encode(params, images)` of `probe_data`'s
    first `max_train` train and `max_test` images of `split` (data.eval_batches' name), with the example
    counts and the feature size: `vitjax eval --knn` and the evaluation during training
    (vitjax/evaluate/in_training.py)."""
    from vitjax import data
    from vitjax.evaluate import fewshot

    train = fewshot.collect(encode, params, data.eval_batches(probe_data, split="train", global_batch_size=batch_size),
                            num_classes=num_classes, max_examples=max_train)
    test = fewshot.collect(encode, params, data.eval_batches(probe_data, split=split, global_batch_size=batch_size),
                           num_classes=num_classes, max_examples=max_test)
    results = {}
    for k in ks:
        for name, value in accuracy(*train, *test, num_classes, k=k, temperature=temperature).items():
            results[f"knn_{k}_{name}"] = value
    return {**results, "train_examples": len(train[0]), "test_examples": len(test[0]),
            "feature_dim": int(train[0].shape[1])}


# --- `vitjax eval --knn` ----------------------------------------------------------------------------

def add_args(parser) -> None:
    """Adds the k-NN options to `vitjax eval`'s argparse parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--knn", action="store_true", help="also run the weighted k-NN classifier (DINO's)")
    group.add_argument("--knn_only", action="store_true",
                       help="run only the weighted k-NN classifier (neither test accuracy nor few-shot)")
    parser.add_argument("--knn_k", default=",".join(map(str, DEFAULT_K)),
                        help="neighbours, comma-separated (the paper: 20; also 10, 100, 200)")
    parser.add_argument("--knn_temperature", type=float, default=TEMPERATURE, help="T of the weights exp(s / T)")
    parser.add_argument("--knn_max_train", type=int, default=None, help="use only the first N train examples")
    parser.add_argument("--knn_train_size", type=int, default=None,
                        help="memory bank: the class-balanced subset of N train images a run with "
                             "data.train_size=N trains on (default: the whole train split)")
    parser.add_argument("--knn_subset_seed", type=int, default=0, help="that subset's data.subset_seed")
    parser.add_argument("--knn_max_test", type=int, default=None, help="score only the first N test examples")


def settings_from_args(args) -> dict | None:
    if not (args.knn or args.knn_only):
        return None
    try:
        ks = tuple(int(k) for k in args.knn_k.split(",") if k.strip())
    except ValueError:
        raise ValueError(f"--knn_k must be comma-separated integers such as 20,200, got {args.knn_k!r}") from None
    return {"ks": ks, "temperature": args.knn_temperature, "max_train": args.knn_max_train,
            "max_test": args.knn_max_test, "train_size": args.knn_train_size, "subset_seed": args.knn_subset_seed}
