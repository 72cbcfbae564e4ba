"""A run's checkpoints, in one room: where they live (locations), whether a step is intact and fits
(integrity), saving and restoring train states (checkpointer), and reading a run's parameters for use
elsewhere (reader)."""
