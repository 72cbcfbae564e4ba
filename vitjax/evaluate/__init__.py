"""Evaluators: top-1 classification accuracy and the few-shot linear probe."""
