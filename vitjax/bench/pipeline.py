"""Input throughput alone: the images per second `vitjax.data.train_batches` delivers for a config.

Each call takes the next batch and turns it into global jax.Arrays (what the trainer's prefetch does
before the step sees it), so the figure is comparable with the train step's images per second. Loading
the dataset and tracing the preprocessing happen before timing starts.
"""
import jax

from vitjax import data, parallel
from vitjax.bench.timing import Workload


def build(config, mesh) -> Workload:
    batches = data.train_batches(config.data, global_batch_size=config.batch_size, seed=config.seed,
                                 process_index=jax.process_index(), process_count=jax.process_count())
    sharding = parallel.batch_sharding(mesh)

    def call():
        return jax.block_until_ready(data.to_global(next(batches), sharding))

    call()  # loads the split and traces the preprocessing ops
    return Workload("input pipeline", call, images=config.batch_size // jax.process_count())
