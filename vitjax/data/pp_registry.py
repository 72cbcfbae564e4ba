"""The preprocessing-op registry: each op's factory under the name pp strings call it by.

A module of its own so that the built-in ops (pp_ops.py) register themselves here and the parser
(preprocess.py) imports them, with neither importing the other in a circle.
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
