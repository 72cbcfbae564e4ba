"""Training: config schema, optimiser, train/eval steps, checkpoints, the loop."""
