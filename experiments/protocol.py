r"""The laptop data-scaling protocol that every Fashion-MNIST study sweep shares (issue: the study must test
the ViT paper's claims, not a fixed budget's saturation).

- **Validation split:** 5,000 training images (500 per class, one fixed draw whatever the seed) are held
  out; training subsets are nested, class-balanced draws from the other 55,000.
- **Early stopping:** the validation split is scored every 100 steps and at the end; a run reports the
  test accuracy of its best-validation step (`test_accuracy_at_best`). Test is never used to select.
- **Budget that grows with the data:** `BUDGET.steps(n)`, the floor long enough for 550 images to
  overfit (279 epochs), 8 epochs of the full 55k (3,438 steps, 440k examples).
- **Paired seeds:** seed s sets both the training seed and the subset draw, for every family alike, so
  family differences can be taken seed by seed.
- No augmentation and the configs' own optimiser (Adam, lr 2e-3, cosine): the paper's Fig. 4 protocol
  adds no regularisation for the small sets; the regularisation arm adds it explicitly.
"""
from vitjax.sweep.budget import GrowingBudget

VAL_SIZE = 5_000
SIZES = (550, 1_700, 5_500, 17_000, 55_000)  # half decades up to the 55k left after the validation split
BUDGET = GrowingBudget(min_steps=1_200, epochs=8, batch_size=128)
EVAL_EVERY = 100


LARGE_SEEDS = 2  # seeds above 5.5k; a read-out that more seeds would decide adds them (large_seeds=)


def seeds(size: int, small_seeds: int = 3, large_seeds: int = LARGE_SEEDS,
          small_up_to: int = 5_500) -> range:
    """Training seeds at `size`: more where runs are cheap and noisy (small sets), fewer where not."""
    return range(small_seeds if size <= small_up_to else large_seeds)


def overrides(size: int, seed: int, budget: GrowingBudget = BUDGET) -> dict:
    """The config overrides of one run of the protocol: data, seed, budget, evaluation cadence."""
    return {
        "seed": seed, "data.subset_seed": seed,
        "data.val_size": VAL_SIZE, "data.train_size": size, "data.class_balanced": True,
        "batch_size": budget.batch_size, "total_epochs": 0.0, "total_steps": budget.steps(size),
        "warmup_steps": 100, "eval_every_steps": EVAL_EVERY, "log_every_steps": 100,
        # Often enough that an interrupted run loses little; the best-validation checkpoint is kept apart.
        "checkpoint_every_steps": 500, "keep_checkpoints": 1,
        "data.pp_train": "value_range(-1, 1)",
    }


# Validation points a rung must gain over the previous one for a longer budget to count: the study's
# noise floor (experiments/README.md, "Converged budgets").
CONVERGENCE_FLOOR = 0.5


def converged_rung(validation: dict, floor: float = CONVERGENCE_FLOOR) -> tuple:
    """(multiple, capped) of a budget ladder from {multiple: best validation accuracy in points}: the
    shortest rung whose next rung gains <= `floor`, or the longest rung, capped=True, when every next
    rung gains more. Raises ValueError for a ladder of fewer than two rungs."""
    multiples = sorted(validation)
    if len(multiples) < 2:
        raise ValueError(f"a convergence check needs at least two rungs, got {multiples}")
    for shorter, longer in zip(multiples, multiples[1:]):
        if validation[longer] - validation[shorter] <= floor:
            return shorter, False
    return multiples[-1], True
