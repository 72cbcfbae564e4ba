"""Evaluators: means of an objective's per-example metrics over a split (evaluator.py; classification's
in classification.py), and the few-shot linear probe.

Nothing here imports vitjax.train (the trainer imports this package); `vitjax eval`, which restores a
run's whole train state, is vitjax/train/reevaluate.py.
"""
