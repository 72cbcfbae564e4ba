"""Host numpy batches -> global jax.Arrays (`to_global`), and a few of them kept on the devices ahead of
the train step (`prefetch`).

JAX only, no TensorFlow: the benchmarks feed synthetic batches through here without importing TF.
"""

import collections

import jax


def _shardings(batch, sharding):
    """One sharding for every leaf, or a pytree of shardings shaped like the batch."""
    if isinstance(sharding, jax.sharding.Sharding):
        return jax.tree.map(lambda _: sharding, batch)
    return sharding


def to_global(batch, sharding):
    """This process's numpy batch -> global jax.Arrays (each process passes its own rows, same sharding)."""
    return jax.tree.map(jax.make_array_from_process_local_data, _shardings(batch, sharding), batch)


def prefetch(iterator, sharding, size=2):
    """Yields to_global(batch) for each batch of `iterator`, with `size` batches already sent to the devices.

    Transfers are asynchronous, so while the model works on one batch the next ones are being copied.
    """
    queue = collections.deque()
    iterator = iter(iterator)

    def enqueue(n):
        for batch in iter(lambda: next(iterator, None), None):
            queue.append(to_global(batch, sharding))
            n -= 1
            if n <= 0:
                return

    enqueue(max(size, 1))
    while queue:
        yield queue.popleft()
        enqueue(1)
