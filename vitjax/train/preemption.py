"""What a run stopped by a preemption notice (SIGTERM) raises, and the exit statuses of stopped commands.

Kept free of JAX so that the command line and the sweep runner, which only read the status, stay
light.
"""
PREEMPTED_EXIT_CODE = 75  # EX_TEMPFAIL: "try again"; schedulers restart the same command
INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


class Preempted(Exception):
    """SIGTERM arrived; a checkpoint of the current step was written before raising."""
