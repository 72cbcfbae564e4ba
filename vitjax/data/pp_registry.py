"""The preprocessing-op registry: each op's factory under the name pp strings call it by.

A module of its own so that the built-in ops (pp_ops.py) register themselves here and the parser
(preprocess.py) imports them, with neither importing the other in a circle.

Built-in ops, by file: pp_ops.py decode, resize, random_crop, central_crop, inception_crop, flip_lr,
value_range, to_rgb; pp_randaugment.py randaugment(n, m, ops=None, p=1.0, mstd=0.0, rotate=30,
shear=0.3, translate=0.45, fill=0); pp_erasing.py random_erasing(p=0.25, area=(0.02, 0.333),
aspect=(0.3, 3.3), fill='pixel'|'zero'). Batch-level Mixup/CutMix are data config keys, not ops
(mixing.py).
"""
_FACTORIES = {}


def register(name):
    """Decorator: makes the op factory findable as `name` in pp strings."""

    def add(factory):
        if name in _FACTORIES:
            raise ValueError(f"pp op {name!r} is registered twice.")
        _FACTORIES[name] = factory
        return factory

    return add


def names() -> list[str]:
    return sorted(_FACTORIES)


def factory(name):
    """The factory registered as `name`, or None."""
    return _FACTORIES.get(name)
