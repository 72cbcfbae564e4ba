"""MAE pre-training (He et al. 2022): reconstruct the pixels of the masked patches, no labels used.

`config.objective = "mae"` with `config.model_name = "mae"` (vitjax/models/mae.py). The model's own
fields are the settings, one place each: `model.mask_ratio` (the paper's 0.75) and
`model.norm_pix_loss` (per-patch normalised targets, the paper's default), so this objective has no
config group. Each step draws its masks from a 'mask' rng stream split off the step's key (which is
`fold_in(seed, step)`, vitjax/train/step.py), so a resumed run masks exactly as an uninterrupted one.

    loss = mae_loss(images, pred, mask)   # mean squared error per patch, over the masked patches only

Logged beside the loss: `loss_visible`, the same error on the visible patches, which the loss ignores
(the encoder saw them, so a decoder that copies them through drives it down; a value far below the
loss says so).

Evaluation: the reconstruction loss on the masked patches (metric 'loss', as each example's mean
over its masked patches, summed over examples), lower is better: the best-validation checkpoint is
the one with the lowest validation loss. Its masks are drawn from the evaluator's fixed key per batch
(vitjax/evaluate/evaluator.py), so every evaluation of the same parameters gives the same loss, at any
step and after a resume, and differences between steps are the parameters', not the masks'.
"""
import dataclasses

import jax
import jax.numpy as jnp

from vitjax.models.mae import mae_loss
from vitjax.objectives.base import Objective, Selection, StepInfo


@dataclasses.dataclass(frozen=True)
class MAE(Objective):
    selection = Selection("loss", higher_is_better=False)

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "MAE":
        """The model is an MAE: vitjax/train/checks.py pairs objective and model (OBJECTIVES' `model`)."""
        return cls(model)

    def loss(self, params, extra, batch, rng, info: StepInfo):
        dropout_key, mask_key = jax.random.split(rng)
        images = batch["image"]
        pred, mask = self.model.apply({"params": params}, images, train=True,
                                      rngs={"dropout": dropout_key, "mask": mask_key})
        loss = self.model.loss(images, pred, mask)
        visible = jax.lax.stop_gradient(self.model.loss(images, pred, 1.0 - mask))
        return loss, {"loss_visible": visible}

    def eval_sums(self, params, batch, rng):
        images = batch["image"]
        pred, mask = self.model.apply({"params": params}, images, train=False, rngs={"mask": rng})
        _, patch = self.model.dims()
        # mae_loss of each example alone: its mean over that example's masked patches.
        per_example = jax.vmap(lambda x, p, m: mae_loss(x[None], p[None], m[None], patch,
                                                        self.model.norm_pix_loss))(images, pred, mask)
        return {"loss": jnp.sum(per_example * batch["mask"].astype(jnp.float32))}

    def eval_logits(self, params, images):
        raise NotImplementedError("an MAE predicts pixels, not classes: its evaluation is eval_sums' "
                                  "reconstruction loss; classify with its encoder (init_from into a ViT)")
