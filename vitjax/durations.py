"""A run's durations as optimiser steps: `{prefix}_steps`, `_epochs` or `_examples` of a config.

Plain arithmetic, importing nothing of vitjax: the trainer (total and warmup, vitjax/train/optimizer.py)
and objectives whose schedules span the run (DINO's teacher momentum, vitjax/objectives/dino.py) read
a run's length the same way.
"""
import math

DURATION_UNITS = ("steps", "epochs", "examples")


def steps_of(config, prefix: str, *, num_train_examples: int, batch_size: int, required: bool) -> int:
    """Reads `{prefix}_steps`, `{prefix}_epochs` or `{prefix}_examples` as optimiser steps.

    At most one of the three may be non-zero (exactly one when `required`).
    """
    given = {unit: config.get(f"{prefix}_{unit}") or 0 for unit in DURATION_UNITS}
    given = {unit: value for unit, value in given.items() if value != 0}
    if len(given) > 1:
        raise ValueError(f"set only one of {', '.join(f'{prefix}_{u}' for u in given)} "
                         f"(got {given}); set the others to 0")
    if not given:
        if required:
            raise ValueError(f"set one of {prefix}_steps, {prefix}_epochs or {prefix}_examples")
        return 0
    (unit, value), = given.items()
    if value < 0:
        raise ValueError(f"{prefix}_{unit} must be >= 0, got {value}")
    if unit == "steps":
        return int(value)
    if unit == "epochs":
        # In floating point value * N can land just above a whole number (8.3 * 60000 is
        # 498000.00000000006), and its ceiling would add a step: round the noise away first.
        examples = math.ceil(round(value * num_train_examples, 6))
    else:
        examples = int(value)
    return -(-examples // batch_size)  # a partial last batch is a step


def set_steps(config, steps: int) -> None:
    """Makes `config` last `steps` optimiser steps whatever its own duration, a tenth of them warmup:
    `vitjax train --steps N`, a short run (a smoke test of a config) in one flag."""
    if steps < 1:
        raise ValueError(f"--steps must be at least 1, got {steps}")
    for prefix, value in (("total", steps), ("warmup", steps // 10)):
        for unit in DURATION_UNITS:
            config[f"{prefix}_{unit}"] = type(config[f"{prefix}_{unit}"])(value if unit == "steps" else 0)


def cooldown_of(fraction: float, total_steps: int) -> int:
    """The steps of a warmup-stable-decay run's final decay: round(fraction x total_steps)."""
    return round(fraction * total_steps)
