"""Training budgets that grow with the data, as in the ViT paper's data-scaling study.

The paper trains longer on more data (ImageNet 300 epochs, ImageNet-21k 90, JFT-300M 7: 0.4B, 1.3B and
2.1B examples seen), so each point of its data-size curves is a model trained to (near) convergence on
its own data. A fixed step budget instead makes the small sets overfit for hundreds of epochs and
leaves the large ones unconverged, and the x axis then measures repetition, not data.

The rule here: `steps = max(min_steps, ceil(epochs * train_size / batch_size))`. The floor lets the
small sets train long enough to overfit (early stopping on the validation split then picks the step);
`epochs` makes the budget grow with the data once the floor is passed.
"""
import dataclasses
import math

from vitjax.durations import cooldown_of


@dataclasses.dataclass(frozen=True)
class GrowingBudget:
    """max(`min_steps`, `epochs` epochs) steps of `batch_size` examples."""

    min_steps: int
    epochs: float
    batch_size: int

    def __post_init__(self):
        if self.min_steps < 1 or self.epochs <= 0 or self.batch_size < 1:
            raise ValueError(f"a budget needs min_steps >= 1, epochs > 0 and batch_size >= 1; got {self}")

    def steps(self, train_size: int) -> int:
        """Training steps for a run on `train_size` examples."""
        if train_size < 1:
            raise ValueError(f"train_size must be >= 1, got {train_size}")
        return max(self.min_steps, math.ceil(self.epochs * train_size / self.batch_size))

    def epochs_of(self, train_size: int) -> float:
        """How many passes over `train_size` examples the budget makes."""
        return self.steps(train_size) * self.batch_size / train_size

    def describe(self) -> str:
        """The rule in words, for figure titles and tables."""
        return f"steps = max({self.min_steps:,}, {self.epochs:g} epochs) of batch {self.batch_size}"


@dataclasses.dataclass(frozen=True)
class Ladder:
    """Budgets of `multiples` x a GrowingBudget, trained as one warmup-stable-decay trunk of the longest
    and a cooldown branched off it for each shorter one (vitjax/train/branch.py)."""

    budget: GrowingBudget
    multiples: tuple
    cooldown_fraction: float = 0.2

    def __post_init__(self):
        if not self.multiples or sorted(set(self.multiples)) != list(self.multiples) or self.multiples[0] < 1:
            raise ValueError(f"a ladder's multiples rise from >= 1 without repeats, got {self.multiples}")

    def rungs(self, train_size: int) -> list[int]:
        """Each rung's training steps, shortest first; the last is the trunk."""
        return [m * self.budget.steps(train_size) for m in self.multiples]

    def branch_steps(self, train_size: int) -> list[int]:
        """The trunk's steps where the shorter rungs start their cooldowns (the checkpoints it keeps)."""
        return [steps - cooldown_of(self.cooldown_fraction, steps) for steps in self.rungs(train_size)[:-1]]

    def runs(self, name_of, config: str, overrides: dict, train_size: int) -> list:
        """A sweep file's (name, config, overrides) of one ladder: the trunk (`name_of(longest multiple)`)
        first, keeping the checkpoints the shorter rungs branch from, then each shorter rung."""
        from vitjax.sweep.spec import SWEEP_DIR  # here: spec loads config files, a budget needs none of it

        base = {**overrides, "schedule": "wsd", "cooldown_fraction": self.cooldown_fraction}
        rungs, trunk = self.rungs(train_size), name_of(self.multiples[-1])
        found = [(trunk, config, {**base, "total_steps": rungs[-1],
                                  "keep_checkpoint_steps": tuple(self.branch_steps(train_size))})]
        for multiple, steps in zip(self.multiples[:-1], rungs):
            found.append((name_of(multiple), config,
                          {**base, "total_steps": steps, "branch_from": f"{SWEEP_DIR}/{trunk}"}))
        return found

    def describe(self) -> str:
        rungs = ", ".join(f"{m}x" for m in self.multiples)
        return (f"{rungs} of {self.budget.describe()}; warmup-stable-decay, each rung's last "
                f"{self.cooldown_fraction:.0%} a linear cooldown")
