"""Model families: ViT (and the R50+ViT hybrid) and BiT ResNet-v2, as flax.linen modules."""
from vitjax.models.bit import BiT
from vitjax.models.vit import ViT

__all__ = ["BiT", "ViT"]
