"""The growing budget: the floor for small sets, epochs for large ones, and bad values refused."""
import pytest

from vitjax.sweep.budget import GrowingBudget


def test_floor_holds_for_small_sets_and_epochs_take_over_for_large_ones():
    budget = GrowingBudget(min_steps=1_200, epochs=8, batch_size=128)
    assert budget.steps(550) == 1_200
    assert budget.steps(17_000) == 1_200  # 8 epochs of 17k = 1,062.5 steps: under the floor
    assert budget.steps(55_000) == 3_438  # ceil(8 * 55,000 / 128) = ceil(3,437.5)
    assert budget.steps(19_200) == 1_200  # exactly 8 epochs = 1,200 steps: the two rules agree


def test_examples_seen_never_shrink_as_data_grows():
    budget = GrowingBudget(min_steps=300, epochs=3, batch_size=64)
    sizes = [100, 1_000, 6_400, 6_401, 20_000, 60_000]
    steps = [budget.steps(n) for n in sizes]
    assert steps == sorted(steps)
    assert budget.epochs_of(60_000) == pytest.approx(3, abs=64 / 60_000)
    assert budget.epochs_of(100) == pytest.approx(300 * 64 / 100)


def test_describe_states_the_rule():
    assert GrowingBudget(1_200, 8, 128).describe() == "steps = max(1,200, 8 epochs) of batch 128"


@pytest.mark.parametrize("args", [(0, 8, 128), (100, 0, 128), (100, 8, 0), (100, -1, 128)])
def test_bad_budgets_are_refused(args):
    with pytest.raises(ValueError, match="budget needs"):
        GrowingBudget(*args)


def test_bad_train_size_is_refused():
    with pytest.raises(ValueError, match="train_size"):
        GrowingBudget(100, 1, 10).steps(0)
