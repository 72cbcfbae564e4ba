"""Frozen features of any run: the model and parameters whose sown `intermediates['pre_logits']` is the
representation the frozen-feature evaluations (k-NN, vitjax/evaluate/knn.py) read.

    model, params = features.feature_model(config, params, num_classes)
    feats = fewshot.feature_fn(model)(params, images)      # [batch, D]

- a classifier (ViT, BiT, Swin): the vector its head reads, CLS or pooled;
- a DINO run: the backbone's CLS output, what the official k-NN evaluation uses (not the projection head);
- an MAE run: its encoder as a ViT on every patch (nothing masked), MAE's fixed position table and the
  CLS token's output (vitjax/models/mae.py's `encoder_params`), the official linear probe's features;
  the head such a ViT needs is a zero placeholder, never read.
"""
import numpy as np


def feature_model(config, params, num_classes: int):
    """(model, params) of a run's `config` (its config.json) and checkpoint `params`, in float32."""
    from vitjax import models  # here: imports jax and flax, which the CLI's argument parsing must not
    from vitjax.models import mae

    if config.model_name == "mae":
        encoder = models.build("mae", num_classes, dtype="float32", **config.model.to_dict())
        model = encoder.classifier(1, posemb="sincos2d_mae")
        width = int(np.shape(params["embedding"]["kernel"])[-1])
        tree = mae.encoder_params(params, pool="tok", posemb="sincos2d_mae")
        tree["head"] = {"kernel": np.zeros((width, 1), np.float32), "bias": np.zeros((1,), np.float32)}
        return model, tree
    if "head" in params:  # a classifier: its head sizes the model, whatever the probe's data has
        num_classes = _outputs(params["head"])
    return models.build(config.model_name, num_classes, dtype="float32", **config.model.to_dict()), params


def _outputs(head) -> int:
    """The class count of a head's parameters: the last axis of its kernel (Dense or 1x1 convolution)."""
    while isinstance(head, dict):
        head = head["kernel"] if "kernel" in head else next(iter(head.values()))
    return int(np.shape(head)[-1])
