"""Training: optimiser, train step, checkpoints, the loop, and re-evaluating a run's train state."""
