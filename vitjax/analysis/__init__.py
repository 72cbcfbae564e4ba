"""Looking inside a trained ViT (ViT paper Fig. 7): position-embedding similarity, mean attention
distance, CLS attention maps and rollout, and the principal components of the patch-embedding filters.

`vitjax.analysis.run.analyze_workdir` writes them all for a run; the other modules are the pieces.
"""
