"""The MAE's training computation in PyTorch, as `vitjax bench` times it beside vitjax's MAE step.

    net = torch_mae.build(image_shape, patch, width, depth, heads, mlp_ratio, decoder_width,
                          decoder_depth, decoder_heads, decoder_mlp_ratio, norm_pix_loss, kept)
    loss = net(images)             # NCHW float32 -> the masked patches' mean squared error

The structure is the official code's (He et al. 2022, facebookresearch/mae models_mae.py), built from
timm's PatchEmbed and Block as that code is: the patch embedding, a fixed 2-D sin-cos table added
before masking, per-image masking by sorting uniform noise and gathering the kept tokens, the CLS
token, the encoder blocks and norm; then the decoder embedding, mask tokens appended and the sequence
un-shuffled by a gather, the decoder's table, blocks, norm and pixel prediction, and the loss over the
masked patches against pixels normalised per patch (unbiased variance, + 1e-6). Blocks are pre-norm
with LayerNorm eps 1e-6 and biased q, k, v, as vitjax's. The sin-cos tables are buffers, not
parameters (the official code registers them as frozen parameters), so the trainable parameter count
is vitjax's MAE's exactly: timm_nets checks it.

Only the arithmetic matters to the benchmark: the weights are timm's random initialisation, and the
masks are drawn by torch each step, as the official training draws them. torch and timm are test extras,
so they are imported when a network is built, not with this module.
"""
import functools

import numpy as np


def sincos_table(width: int, rows: int, cols: int) -> np.ndarray:
    """[1 + rows * cols, width]: MAE's fixed 2-D sin-cos position table, a zero row for CLS first
    (the first half of the channels encodes the column, the second the row; each half sin then cos of
    positions times 1 / 10000^(2i/d), d that half's width)."""
    def one_axis(dim, positions):
        omega = 1.0 / 10000 ** (np.arange(dim // 2, dtype=np.float64) / (dim / 2.0))
        angles = positions.reshape(-1)[:, None] * omega[None]
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    grid_cols, grid_rows = np.meshgrid(np.arange(cols, dtype=np.float64), np.arange(rows, dtype=np.float64))
    table = np.concatenate([one_axis(width // 2, grid_cols), one_axis(width // 2, grid_rows)], axis=1)
    return np.concatenate([np.zeros((1, width)), table], axis=0).astype(np.float32)


def build(image_shape, patch: int, width: int, depth: int, heads: int, mlp_ratio: float, decoder_width: int,
          decoder_depth: int, decoder_heads: int, decoder_mlp_ratio: float, norm_pix_loss: bool, kept: int):
    """The MAE network (module docstring) on images of `image_shape` (H, W, C), `kept` tokens visible."""
    return _module_class()(image_shape, patch, width, depth, heads, mlp_ratio, decoder_width, decoder_depth,
                           decoder_heads, decoder_mlp_ratio, norm_pix_loss, kept)


@functools.cache
def _module_class():  # long: the module class is defined here, where torch (a test extra) is imported
    import torch
    from timm.layers import PatchEmbed
    from timm.models.vision_transformer import Block
    from torch import nn

    def _norm(width: int, **kwargs) -> nn.LayerNorm:
        return nn.LayerNorm(width, eps=1e-6, **kwargs)  # timm's Block passes device and dtype

    class MaskedAutoencoder(nn.Module):
        def __init__(self, image_shape, patch: int, width: int, depth: int, heads: int, mlp_ratio: float,
                     decoder_width: int, decoder_depth: int, decoder_heads: int, decoder_mlp_ratio: float,
                     norm_pix_loss: bool, kept: int):
            super().__init__()
            height, image_width, channels = image_shape
            self.patch, self.kept, self.norm_pix_loss = patch, kept, norm_pix_loss
            self.patch_embed = PatchEmbed((height, image_width), patch, channels, width)
            rows, cols = height // patch, image_width // patch
            self.register_buffer("pos_embed", torch.from_numpy(sincos_table(width, rows, cols))[None])
            self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
            layer = lambda dim, n, ratio: Block(dim, n, ratio, qkv_bias=True, norm_layer=_norm)  # noqa: E731
            self.blocks = nn.ModuleList([layer(width, heads, mlp_ratio) for _ in range(depth)])
            self.norm = _norm(width)
            self.decoder_embed = nn.Linear(width, decoder_width)
            self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_width))
            self.register_buffer("decoder_pos_embed", torch.from_numpy(sincos_table(decoder_width, rows, cols))[None])
            self.decoder_blocks = nn.ModuleList([layer(decoder_width, decoder_heads, decoder_mlp_ratio)
                                                 for _ in range(decoder_depth)])
            self.decoder_norm = _norm(decoder_width)
            self.decoder_pred = nn.Linear(decoder_width, patch * patch * channels)
            nn.init.normal_(self.cls_token, std=0.02)
            nn.init.normal_(self.mask_token, std=0.02)

        def patchify(self, images):
            """NCHW -> [B, rows * cols, patch * patch * C], each patch's pixels row by row, channels last."""
            b, c, h, w = images.shape
            p = self.patch
            x = images.reshape(b, c, h // p, p, w // p, p)
            return torch.einsum("bchpwq->bhwpqc", x).reshape(b, (h // p) * (w // p), p * p * c)

        def encode(self, images):
            x = self.patch_embed(images) + self.pos_embed[:, 1:]
            batch, length, width = x.shape
            ids_shuffle = torch.argsort(torch.rand(batch, length, device=x.device), dim=1)
            ids_restore = torch.argsort(ids_shuffle, dim=1)
            x = torch.gather(x, 1, ids_shuffle[:, :self.kept, None].expand(-1, -1, width))
            mask = torch.ones(batch, length, device=x.device)
            mask[:, :self.kept] = 0
            mask = torch.gather(mask, 1, ids_restore)
            cls = (self.cls_token + self.pos_embed[:, :1]).expand(batch, -1, -1)
            x = torch.cat([cls, x], dim=1)
            for block in self.blocks:
                x = block(x)
            return self.norm(x), mask, ids_restore

        def decode(self, latent, ids_restore):
            x = self.decoder_embed(latent)
            batch, length = ids_restore.shape
            tokens = torch.cat([x[:, 1:], self.mask_token.expand(batch, length + 1 - x.shape[1], -1)], dim=1)
            tokens = torch.gather(tokens, 1, ids_restore[..., None].expand(-1, -1, x.shape[2]))
            x = torch.cat([x[:, :1], tokens], dim=1) + self.decoder_pos_embed
            for block in self.decoder_blocks:
                x = block(x)
            return self.decoder_pred(self.decoder_norm(x))[:, 1:]

        def loss(self, images, pred, mask):
            """The mean over masked patches (mask 1) of each patch's mean squared error."""
            target = self.patchify(images)
            if self.norm_pix_loss:
                target = (target - target.mean(dim=-1, keepdim=True)) / (target.var(dim=-1, keepdim=True) + 1e-6) ** 0.5
            per_patch = ((pred - target) ** 2).mean(dim=-1)
            return (per_patch * mask).sum() / mask.sum()

        def forward(self, images):
            latent, mask, ids_restore = self.encode(images)
            return self.loss(images, self.decode(latent, ids_restore), mask)

    return MaskedAutoencoder
