"""DINO's network (Caron et al. 2021): a ViT backbone whose CLS output feeds the DINO projection head.

    model = DINO(num_classes=10, variant="S/16", head_out_dim=65536)   # num_classes: unused (no classifier)
    scores, embedding = model.apply({"params": params}, images, train=True)
    # scores [batch, K] float32 (DINOHead), embedding [batch, width]: the backbone's CLS token output

The student and the teacher of vitjax/objectives/dino.py are both this network. It is the ViT (the same
fields, modules and parameter names: `embedding`, `cls`, `Transformer/...`) with the classification
head replaced by `dino_head` (vitjax/models/dino_head.py), so a DINO run's backbone loads into a ViT
classifier for fine-tuning with `init_from` as any ViT checkpoint does (its `head` starts afresh), and
the frozen-feature evaluations (few-shot, k-NN) read the sown `intermediates['pre_logits']`, the
backbone embedding the official k-NN evaluation uses. For multi-crop the objective sets
`posemb_table_grid`, so that one learned position table serves every crop size.
"""
from vitjax.models.dino_head import DINOHead
from vitjax.models.vit import ViT


class DINO(ViT):
    """ViT backbone + DINOHead. `head_*` fields are DINOHead's (out_dim = K prototypes); the ViT's
    head options (`representation_size`, `head_zero_init`, `distillation_token`) do not apply."""
    head_out_dim: int = 65536
    head_hidden_dim: int = 2048
    head_bottleneck_dim: int = 256
    head_layers: int = 3
    norm_last_layer: bool = True

    def check_input_shape(self, image_shape) -> None:
        super().check_input_shape(image_shape)
        if self.distillation_token or self.representation_size is not None:
            raise ValueError("a DINO model has no classifier: drop model.distillation_token and "
                             "model.representation_size")
        if self.head_out_dim < 1 or self.head_bottleneck_dim < 1 or self.head_hidden_dim < 1:
            raise ValueError(f"DINO's head needs positive sizes, got head_out_dim={self.head_out_dim}, "
                             f"head_hidden_dim={self.head_hidden_dim}, head_bottleneck_dim={self.head_bottleneck_dim}")

    def _heads(self, x, train: bool):
        """(prototype scores [b, K], backbone embedding [b, width]) from the pooled rows [b, 1, width]."""
        embedding = x[:, 0]
        self.sow("intermediates", "pre_logits", embedding)
        head = DINOHead(self.head_out_dim, self.head_hidden_dim, self.head_bottleneck_dim, self.head_layers,
                        self.norm_last_layer, dtype=self.dtype, param_dtype=self.param_dtype, name="dino_head")
        return head(embedding), embedding

