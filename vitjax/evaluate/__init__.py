"""Evaluators: the eval step and top-1 classification accuracy, and the few-shot linear probe.

Nothing here imports vitjax.train (the trainer imports this package); `vitjax eval`, which restores a
run's whole train state, is vitjax/train/reevaluate.py.
"""
