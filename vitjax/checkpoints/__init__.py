"""A run's checkpoints, in one room: where they live (locations), whether a step is intact and fits
(integrity), saving and restoring train states (checkpointer), reading a run's parameters for use
elsewhere (reader), and a failure reported once, not again by the library's threads (reported_once)."""
