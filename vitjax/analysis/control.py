"""The initialised control: the run's own architecture at the parameters training started from.

A figure of a trained model means something only beside the same figure at initialisation: a random
ViT already attends about as far as uniform attention, and random filters already have an uneven PCA
spectrum. `vitjax analyze` therefore analyses both; this module makes the second set of parameters
exactly as the trainer did (`model.init` on a zero image with the run's init key, derived from the
config's seed by `trainer.run_keys`), so the control is the run's step-0 state, not merely a similar one.
"""
import numpy as np  # jax and flax are imported on use: `vitjax analyze`'s parser imports this module

TRAINED, INIT = "trained", "init"  # the `model` column of every table


def seed_of(config) -> int:
    """The run's seed; 0 when the config predates the field (the trainer's default)."""
    return int(config.get("seed", 0))


def initial_params(model, seed: int, image_shape) -> dict:
    """`model`'s parameters at initialisation with the trainer's init key for `seed`, as host numpy."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    from vitjax.train import trainer  # heavy (data, optimiser); only this control needs it

    init_key, _ = trainer.run_keys(seed)
    dummy = jnp.zeros((1, *image_shape), jnp.float32)
    variables = jax.jit(lambda key: model.init(key, dummy, train=False))(init_key)
    return jax.tree.map(np.asarray, nn.meta.unbox(variables["params"]))


def check_same_shapes(trained: dict, init: dict) -> None:
    """Raises ValueError unless both parameter trees have the same structure and shapes: a control of
    another shape (the wrong image size for the position embedding, say) would compare nothing."""
    import jax
    if jax.tree.map(np.shape, trained) != jax.tree.map(np.shape, init):
        raise ValueError("the initialised model's parameters do not match the checkpoint's in structure or "
                         "shape; was the image shape the one the model was trained at?")
