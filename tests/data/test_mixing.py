"""Mixup / CutMix per batch, repeated augmentation, resume with the DeiT ops, and their config errors."""

import numpy as np
import pytest

from vitjax import data
from vitjax.data import config, mixing
from tests.data.iterators import take

CFG = dict(
    name="synthetic",
    pp_train="randaugment(2, 9, mstd=0.5)|random_crop(8, pad=1)|flip_lr|random_erasing(0.5)|value_range(-1, 1)",
    pp_eval="value_range(-1, 1)",
    synthetic=dict(num_train=96, num_test=40, image_shape=(8, 8, 3), num_classes=4),
)


def mixing_cfg(**changes):
    return config.resolve(dict(CFG, **changes))


def test_cutmix_labels_weigh_exactly_the_pasted_pixels():
    """Image i is constant i + 1, so every pixel tells whose it is; the labels' weights must equal the
    pixel counts, also where the box was clipped at the border."""
    b, h, w = 6, 10, 7
    images = np.broadcast_to(np.arange(1, b + 1, dtype=np.float32)[:, None, None, None], (b, h, w, 2)).copy()
    onehot = np.eye(b, dtype=np.float32)
    cfg = mixing_cfg(cutmix_alpha=1.0)
    clipped = 0
    for step in range(300):
        mix = mixing.draw(cfg, 3, step, h, w)
        assert mix.kind == "cutmix"
        top, bottom, left, right = mix.box
        clipped += (bottom - top, right - left) != (round(h * np.sqrt(1 - mix.lam)), round(w * np.sqrt(1 - mix.lam)))
        out, targets = mixing.apply(images, onehot, mix)
        for i in range(b):
            own = (out[i] == i + 1).mean()
            pasted = (out[i] == (i - 1) % b + 1).mean()
            assert own + pasted == 1
            assert targets[i, i] == pytest.approx(own, abs=1e-6) and mix.lam == pytest.approx(own, abs=1e-12)
            assert targets[i, (i - 1) % b] == pytest.approx(pasted, abs=1e-6)
    assert clipped > 30  # the border case was exercised


def test_mixup_alone_draws_the_lambdas_it_always_did():
    """Runs with data.mixup_alpha from before CutMix existed mix (and so resume) exactly as they did."""
    cfg = mixing_cfg(mixup_alpha=0.4)
    for step in range(20):
        mix = mixing.draw(cfg, 5, step, 8, 8)
        assert mix.kind == "mixup" and mix.lam == np.random.default_rng([13, 5, step]).beta(0.4, 0.4)


def test_switch_and_mix_probabilities_hold_over_many_batches():
    cfg = mixing_cfg(mixup_alpha=0.8, cutmix_alpha=1.0, mixup_prob=0.8, mixup_switch_prob=0.3)
    kinds = [mixing.draw(cfg, 0, step, 8, 8).kind for step in range(4000)]
    mixed = 1 - kinds.count("none") / len(kinds)
    cutmix = kinds.count("cutmix") / (len(kinds) - kinds.count("none"))
    assert abs(mixed - 0.8) < 4 * np.sqrt(0.8 * 0.2 / 4000)
    assert abs(cutmix - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 3200)
    only_cutmix = {mixing.draw(mixing_cfg(cutmix_alpha=1.0), 0, s, 8, 8).kind for s in range(50)}
    assert only_cutmix == {"cutmix"}
    assert {mixing.draw(mixing_cfg(), 0, s, 8, 8).kind for s in range(50)} == {"none"}


def test_resume_with_the_deit_ops_gives_the_uninterrupted_batches():
    cfg = dict(CFG, mixup_alpha=0.8, cutmix_alpha=1.0, repeated_augmentation=2)
    full = take(data.train_batches(cfg, global_batch_size=16, seed=5), 14)  # 6 steps an epoch
    resumed = take(data.train_batches(cfg, global_batch_size=16, seed=5, start_step=9), 5)
    for a, b in zip(full[9:14], resumed):
        np.testing.assert_array_equal(a["image"], b["image"])
        np.testing.assert_array_equal(a["labels"], b["labels"])
    assert {len(np.unique(b["labels"])) > 2 for b in full} == {True}  # mixed every step
    shares = [take(data.train_batches(cfg, global_batch_size=16, seed=5, start_step=9, process_index=p,
                                      process_count=2), 1)[0] for p in range(2)]
    assert shares[0]["image"].shape == (8, 8, 8, 3)  # each process mixes its own share: only shapes compare


def test_repeated_augmentation_repeats_examples_with_other_augmentations():
    plain = dict(CFG, pp_train="", repeated_augmentation=4)
    first = take(data.train_batches(plain, global_batch_size=16, seed=1), 6)  # one epoch: 6 steps
    for batch in first:
        rows = batch["image"].reshape(4, 4, -1)  # [copy, example, pixels]
        assert (rows == rows[:1]).all() and len({r.tobytes() for r in rows[0]}) == 4
    seen = {r.tobytes() for b in first for r in b["image"].reshape(16, -1)}
    assert len(seen) == 24  # an epoch keeps its 6 steps: 96 / 4 distinct examples
    augmented = take(data.train_batches(dict(CFG, repeated_augmentation=4), global_batch_size=16, seed=1), 1)[0]
    copies = augmented["image"].reshape(4, 4, -1)
    assert all(len({c.tobytes() for c in copies[:, k]}) == 4 for k in range(4))  # each copy its own draw
    np.testing.assert_array_equal(augmented["labels"].reshape(4, 4, -1), np.broadcast_to(
        augmented["labels"][:4], (4, 4, 4)))


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(mixup_alpha=-0.1), r"mixup_alpha must be >= 0 \(0 turns it off.*got -0.1"),
        (dict(cutmix_alpha=-1.0), r"cutmix_alpha must be >= 0 \(0 turns it off.*got -1.0"),
        (dict(mixup_prob=1.5), r"mixup_prob is a probability: use a value in \[0, 1\], got 1.5"),
        (dict(mixup_switch_prob=-0.2), r"mixup_switch_prob is a probability: use a value in \[0, 1\], got -0.2"),
        (dict(repeated_augmentation=0), r"repeated_augmentation must be an int >= 1 \(1: off; DeiT: 3\), got 0"),
        (dict(pp_train="randaugment(2, 9, ops=('rotate', 'invert'))|value_range(-1, 1)"),
         r"unknown transforms \['invert'\]"),
    ],
)
def test_bad_values_fail_before_any_data_flows(changes, message):
    with pytest.raises(data.DataError, match=message):
        data.get_info(dict(CFG, **changes))


def test_batch_not_divisible_by_the_repeats_fails_naming_both():
    with pytest.raises(data.DataError, match=r"global batch size 16 is not divisible by repeated_augmentation=3"):
        data.train_batches(dict(CFG, repeated_augmentation=3), global_batch_size=16)
