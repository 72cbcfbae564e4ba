"""Preprocessing op strings: the parser for "op(args)|op|..." and the ops it finds by name (pp_ops.py).

An op is registered as a factory: called with the arguments written in the string, it returns a function
`fn(images, u) -> images` on a BATCH: images is a uint8 or float32 [b, H, W, C] tf.Tensor, u is float32
[b, UNIFORMS_PER_OP] of uniform [0, 1) numbers, one row per image, that are the op's only source of
randomness. The caller draws u keyed by (run seed, step, example) (pipeline.py's batch_uniforms), so
augmentations are reproducible, independent of the process count, and the same whether an op runs on a
whole batch (fast: images of one size) or on batches of one (images whose sizes vary until an op resizes
them).

Op arguments are Python literals only (parsed with `ast`, never `eval`), so a config cannot run code.
"""

import ast
import inspect

import tensorflow as tf

from vitjax.data import pp_ops
from vitjax.data.config import DataError

UNIFORMS_PER_OP = 4


def known_ops():
    return pp_ops.names()


def _parse_op(text, pp):
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise DataError(f"Cannot parse pp op {text.strip()!r} in {pp!r}: {e.msg}.") from None
    if isinstance(node, ast.Name):
        return node.id, (), {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        try:
            args = tuple(ast.literal_eval(a) for a in node.args)
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except ValueError:
            raise DataError(
                f"pp op {text.strip()!r} in {pp!r}: arguments must be literals (numbers, strings, tuples)."
            ) from None
        return node.func.id, args, kwargs
    raise DataError(f"Cannot parse pp op {text.strip()!r} in {pp!r}: expected name or name(args).")


def parse(pp):
    """'a(1)|b' -> [('a', (1,), {}), ('b', (), {})]. An empty string is the identity."""
    return [_parse_op(part, pp) for part in pp.split("|") if part.strip()]


def _rows(fn):
    """Rows of uniforms the op fn takes: 1, or enough for its `num_uniforms`."""
    return max(1, -(-getattr(fn, "num_uniforms", UNIFORMS_PER_OP) // UNIFORMS_PER_OP))


class Preprocess:
    """The ops of one pp string, applied in order. `num_ops` sizes the uniforms the caller must draw: the
    rows of UNIFORMS_PER_OP numbers per image, one per op (more for an op that sets `num_uniforms`)."""

    def __init__(self, pp):
        self.pp = pp
        self._fns = []
        for name, args, kwargs in parse(pp):
            factory = pp_ops.factory(name)
            if factory is None:
                raise DataError(
                    f"Unknown pp op {name!r} in {pp!r}. Known ops: {', '.join(pp_ops.names())}."
                )
            try:
                inspect.signature(factory).bind(*args, **kwargs)
            except TypeError as e:
                raise DataError(
                    f"Bad arguments for pp op {name!r} in {pp!r}: {e}. "
                    f"Signature: {name}{inspect.signature(factory)}."
                ) from None
            self._fns.append(factory(*args, **kwargs))
        self.num_ops = sum(_rows(fn) for fn in self._fns)

    def __call__(self, images, uniforms):
        """images [b, H, W, C], uniforms [b, num_ops, UNIFORMS_PER_OP] -> preprocessed images [b, ...]."""
        first = 0
        for fn in self._fns:
            rows = _rows(fn)
            u = uniforms[:, first] if rows == 1 else tf.reshape(
                uniforms[:, first : first + rows], [-1, rows * UNIFORMS_PER_OP]
            )
            images = fn(images, u)
            first += rows
        return images

    def output_spec(self, image_shape, dtype=tf.uint8):
        """(shape, dtype) of one image of `image_shape` after the ops, by tracing (no data is touched).

        None in `image_shape` stands for a size that varies between images; None in the result means the ops
        leave it varying. Checks that need the image size (a crop larger than the image) raise here.
        """
        # autograph=False: our DataErrors then reach the caller as they are, not wrapped in a StagingError.
        traced = tf.function(self.__call__, autograph=False).get_concrete_function(
            tf.TensorSpec([None, *image_shape], dtype),
            tf.TensorSpec([None, self.num_ops, UNIFORMS_PER_OP], tf.float32),
        )
        out = traced.structured_outputs
        return tuple(out.shape.as_list()[1:]), out.dtype
