"""Stand-in for timm.models.vision_transformer (timm 0.6.7, which the FedPerfix code pins), written
for pfl's side-by-side harness from the architecture's description; it is not timm's source.

What the FedPerfix code (imguangyu/FedPerfix, system/) uses of it, and all this module offers:

  VisionTransformer  the plain ViT: a Conv2d patch embedding (patch_embed.proj), a class token
                     and learned positions (cls_token, pos_embed), pre-norm blocks, the final
                     LayerNorm (norm) over every token, and a Linear head on the class token;
                     forward_features(x) and forward_head(x) as Prefix.forward calls them, and
                     the attributes it reads (embed_dim, patch_embed.patch_size, blocks)
  Block              norm1 -> attn -> residual, norm2 -> mlp (fc1, exact GELU, fc2) -> residual
  Attention          one fused biased qkv Linear, num_heads, scale = head_dim ** -0.5, attn_drop,
                     proj, proj_drop: the attributes AdapterAttention (prefix.py) copies before
                     replacing the module, and the same forward as AdapterAttention without the
                     prefix
  PatchEmbed         Conv2d(in_chans, embed_dim, patch, stride=patch), flattened to tokens

Parameter names and shapes are timm's (patch_embed.proj.weight, cls_token, pos_embed,
blocks.<i>.norm1/attn.qkv/attn.proj/norm2/mlp.fc1/mlp.fc2, norm, head): the official code picks
its local parts by substrings of these names ('attn', 'head', 'adapter', 'norm', 'blocks.11'),
so they decide what stays local. Initialization is timm's default ('' mode): every Linear's
weight truncated normal with std 0.02 and bias zero, pos_embed truncated normal std 0.02,
cls_token normal std 1e-6, LayerNorms 1 and 0, the patch Conv2d PyTorch's default. Every
dropout and drop-path rate is 0 (timm's and the FedPerfix code's defaults), so they are left
out; layer scale (init_values None) is the identity and left out as well.

How it could change results: only through a difference from timm 0.6.7 in the layout, the
initial weights' distribution or the forward pass, none of which is intended. The random
numbers differ from timm's: timm draws in its own module order, so even under the same seed
the initial weights are not bit-identical to a real timm's (the distribution is the same).
"""
import torch
from torch import nn

__all__ = ["VisionTransformer", "PatchEmbed", "Block", "Attention", "Mlp"]


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class PatchEmbed(nn.Module):
    """Image [B, C, H, W] -> patch tokens [B, N, embed_dim] through one strided Conv2d."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.img_size, self.patch_size = _pair(img_size), _pair(patch_size)
        if self.img_size[0] % self.patch_size[0] or self.img_size[1] % self.patch_size[1]:
            raise ValueError(f"timm stand-in: image {self.img_size} is not a multiple of patch {self.patch_size}")
        self.grid_size = (self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.flatten = True
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size)
        self.norm = nn.Identity()

    def forward(self, x):
        if tuple(x.shape[-2:]) != self.img_size:
            raise ValueError(f"timm stand-in: input of {tuple(x.shape[-2:])}, the model is built for {self.img_size}")
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class Attention(nn.Module):
    """Multi-head self-attention with one fused qkv projection."""

    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"timm stand-in: dim {dim} is not a multiple of {num_heads} heads")
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = self.attn_drop(((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1))
        return self.proj_drop(self.proj((a @ v).transpose(1, 2).reshape(b, n, c)))


class Mlp(nn.Module):
    """fc1 -> GELU (exact, erf) -> fc2."""

    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm transformer block: x + attn(norm1(x)), then x + mlp(norm2(x))."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """timm's plain ViT with a class token, token pooling and LayerNorm eps 1e-6."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token",
                 embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True):
        super().__init__()
        if global_pool != "token":
            raise NotImplementedError(f"timm stand-in: global_pool {global_pool!r} (only 'token')")
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.num_features = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(0.0)
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads, mlp_ratio, qkv_bias) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.fc_norm = nn.Identity()
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        return self.norm(self.blocks(x))

    def forward_head(self, x, pre_logits=False):
        x = self.fc_norm(x[:, 0])
        return x if pre_logits else self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))

