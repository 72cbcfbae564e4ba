"""The weighted k-NN classifier (vitjax/evaluate/knn.py) against a brute-force numpy reference written
from the DINO paper's description, its edge cases, and `vitjax eval --knn_only` on a supervised, a DINO and
an MAE run's frozen features."""
import json
import os
import shutil

import numpy as np
import pytest

from vitjax import cli, rundir
from vitjax.evaluate import knn


def _reference(train, train_labels, test, num_classes, k, T):
    """One test row at a time: cosine similarity to every train row, the k largest, votes exp(s / T)."""
    train = train / np.linalg.norm(train, axis=1, keepdims=True)
    predictions = []
    for row in test:
        s = train @ (row / np.linalg.norm(row))
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:k]
        totals = np.zeros(num_classes)
        for i in order:
            totals[train_labels[i]] += np.exp(s[i] / T)
        predictions.append(totals)
    return np.asarray(predictions)


@pytest.mark.parametrize("k, T, num_train", [(20, 0.07, 300), (5, 0.5, 40), (1, 0.07, 30), (50, 0.07, 30)])
def test_votes_and_accuracy_equal_the_brute_force_reference(k, T, num_train):
    rng = np.random.default_rng(k)
    centres = rng.normal(size=(6, 16))
    train_labels, test_labels = rng.integers(0, 6, num_train), rng.integers(0, 6, 700)
    train = centres[train_labels] + rng.normal(size=(num_train, 16)) * 1.5
    test = centres[test_labels] + rng.normal(size=(700, 16)) * 1.5  # > CHUNK rows: several blocks
    want = _reference(train, train_labels, test, 6, k, T)
    np.testing.assert_allclose(knn.votes(train, train_labels, test, 6, k=k, temperature=T), want, rtol=1e-5)
    result = knn.accuracy(train, train_labels, test, test_labels, 6, k=k, temperature=T)
    assert result["top1"] == pytest.approx(np.mean(np.argmax(want, 1) == test_labels))
    top5 = np.argsort(-want, axis=1, kind="stable")[:, :5]
    assert result["top5"] == pytest.approx(np.mean(np.any(top5 == test_labels[:, None], axis=1)))


def test_features_are_compared_by_direction_alone():
    rng = np.random.default_rng(0)
    train, test, labels = rng.normal(size=(50, 8)), rng.normal(size=(10, 8)), rng.integers(0, 3, 50)
    scale = rng.uniform(0.1, 10, size=(50, 1))
    np.testing.assert_allclose(knn.votes(train * scale, labels, test * 3, 3), knn.votes(train, labels, test, 3), rtol=1e-5)
    assert "top5" not in knn.accuracy(train, labels, test, labels[:10], 3)


def _eval_knn(workdir, capsys):
    capsys.readouterr()
    cli.main(["eval", "--workdir", workdir, "--knn_only", "--knn_k", "5,20", "--knn_max_train", "200"])
    line = capsys.readouterr().out
    saved = json.loads(open(os.path.join(workdir, rundir.KNN)).read())
    assert saved["k"] == [5, 20] and saved["train_examples"] == 200 and saved["test_examples"] == 128
    assert 0 <= saved["knn_20_top1"] <= 1 and "knn_5_top1=" in line
    assert saved["feature_dim"] == 32  # the tiny ViT's width, DINO's backbone's too
    return saved


def test_vitjax_eval_knn_on_a_supervised_and_a_dino_run(trained_tiny_run, trained_tiny_dino_run, tmp_path, capsys):
    for name, run in (("supervised", trained_tiny_run), ("dino", trained_tiny_dino_run)):
        workdir = str(tmp_path / name)  # a copy: the eval writes knn.json, the shared runs stay as trained
        shutil.copytree(run, workdir)
        _eval_knn(workdir, capsys)


def test_an_mae_runs_features_are_its_encoders_cls_output_on_every_patch():
    import flax.linen as nn
    import jax

    from tests.train import tiny_config
    from vitjax import models
    from vitjax.evaluate import features, fewshot

    config = tiny_config.get_config("model=mae")
    config.model.mask_ratio = 0.0  # every patch visible (shuffled: the CLS output does not see the order)
    mae = models.build("mae", 4, **config.model.to_dict())
    images = jax.random.normal(jax.random.key(1), (3, 16, 16, 3))
    params = jax.jit(lambda x: nn.unbox(mae.init({"params": jax.random.key(0), "mask": jax.random.key(0)}, x)))(images)
    params = jax.tree.map(np.asarray, params["params"])
    model, tree = features.feature_model(config, params, 4)

    @jax.jit
    def latent_cls(params, images):
        _, state = mae.apply({"params": params}, images, rngs={"mask": jax.random.key(2)}, mutable=["intermediates"])
        return state["intermediates"]["latent"][0][:, 0]

    want = latent_cls(params, images)
    assert want.shape == (3, 32)
    np.testing.assert_allclose(fewshot.feature_fn(model)(tree, images), want, rtol=1e-4, atol=1e-5)


def test_a_subset_memory_bank_is_the_class_balanced_subset_a_run_of_that_size_trains_on(trained_tiny_run, tmp_path,
                                                                                        monkeypatch, capsys):
    """`--knn_train_size N --knn_subset_seed S`: N labelled images, balanced over the classes, drawn as
    data.train_size=N, data.subset_seed=S draws them; written beside the whole-split knn.json."""
    from vitjax import data

    workdir = str(tmp_path / "run")
    shutil.copytree(trained_tiny_run, workdir)
    banks = []
    original = knn.accuracy
    monkeypatch.setattr(knn, "accuracy", lambda train, labels, *rest, **kw: banks.append((train, labels)) or original(
        train, labels, *rest, **kw))
    for seed in (1, 2):
        cli.main(["eval", "--workdir", workdir, "--knn_only", "--knn_train_size", "40", "--knn_subset_seed", str(seed)])
    saved = json.loads(open(os.path.join(workdir, "knn_n40_s1.json")).read())
    assert saved["train_examples"] == 40 and saved["train_size"] == 40 and saved["subset_seed"] == 1
    assert os.path.exists(os.path.join(workdir, "knn_n40_s2.json"))
    assert not os.path.exists(os.path.join(workdir, rundir.KNN))  # the whole-split result is another file
    (features, labels), (other_features, _) = banks
    assert np.bincount(labels, minlength=4).tolist() == [10, 10, 10, 10]
    assert features.shape == other_features.shape and not np.array_equal(features, other_features)  # other images
    # The run's own data pipeline, asked for that subset, yields the same labels in the same order.
    config = rundir.load_config(workdir)
    subset = {**config.data.to_dict(), "train_size": 40, "class_balanced": True, "subset_seed": 1}
    want = np.concatenate([np.asarray(b["label"])[np.asarray(b["mask"], bool)]
                           for b in data.eval_batches(subset, split="train", global_batch_size=64)])
    np.testing.assert_array_equal(labels, want)
    with pytest.raises(SystemExit, match="knn_train_size must be a positive"):
        cli.main(["eval", "--workdir", workdir, "--knn_only", "--knn_train_size", "0"])
