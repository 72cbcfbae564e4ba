"""vitjax: Vision Transformers and BiT baselines in JAX/Flax."""
