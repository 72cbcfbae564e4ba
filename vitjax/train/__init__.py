"""Training: optimiser, train/eval steps, checkpoints, the loop."""
