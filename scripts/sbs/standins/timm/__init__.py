"""Stand-in for timm (pytorch-image-models; the FedPerfix code pins 0.6.7), written for pfl's
side-by-side harness (scripts/sbs/fedperfix_official.py). Not timm's source: timm is not
installable here (no PyPI access, no Debian package), and the FedPerfix code needs only its
plain ViT, which timm/models/vision_transformer.py beside this file builds from the
architecture's description.

create_model(name, pretrained=False, num_classes=...) is the only function the FedPerfix code
calls (system/main.py's setup()). It builds the ViTs timm registers under these names, with
timm's geometry:

  vit_tiny_patch16_224    dim 192, depth 12, 3 heads     (224x224, patch 16, MLP ratio 4,
  vit_small_patch16_224   dim 384, depth 12, 6 heads      qkv bias, 3 input channels)
  vit_base_patch16_224    dim 768, depth 12, 12 heads
  and the same names with the suffix _in21k (the code's --basic_model default)

A deliberate size reduction: the environment variable TIMM_STANDIN_VIT, where set, overrides
that geometry for every model built, as comma-separated key=value pairs of img_size,
patch_size, in_chans, embed_dim, depth, num_heads and mlp_ratio (for instance
"img_size=32,patch_size=4,embed_dim=64,depth=4,num_heads=4"). The harness sets it so that the
official code trains the same small ViT as pfl's config (configs/sbs-fedperfix-fmnist.yaml):
the official presets name vit_small_patch16_224 and nothing else. create_model prints the
geometry it built, so every log shows it.

pretrained=True raises: there are no weights here (the FedPerfix presets all train from
scratch, --no_pt). How it could change results: see vision_transformer.py.
"""
import os
import sys

from .models.vision_transformer import VisionTransformer

__version__ = "0.6.7-standin"

_VITS = {  # name: (embed_dim, depth, num_heads), at 224x224 with patch 16
    "vit_tiny_patch16_224": (192, 12, 3),
    "vit_small_patch16_224": (384, 12, 6),
    "vit_base_patch16_224": (768, 12, 12),
}
_KEYS = {"img_size": int, "patch_size": int, "in_chans": int, "embed_dim": int, "depth": int, "num_heads": int,
         "mlp_ratio": float}


def _override(spec):
    out = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise ValueError(f"timm stand-in: TIMM_STANDIN_VIT item {item!r}: want key=value, key one of {sorted(_KEYS)}")
        out[key] = _KEYS[key](value)
    return out


def create_model(model_name, pretrained=False, num_classes=1000, **kwargs):
    if pretrained:
        raise NotImplementedError("timm stand-in: no pretrained weights (train from scratch: --no_pt)")
    if kwargs:
        raise NotImplementedError(f"timm stand-in: create_model arguments {sorted(kwargs)}")
    base = model_name[:-len("_in21k")] if model_name.endswith("_in21k") else model_name
    if base not in _VITS:
        raise NotImplementedError(f"timm stand-in: model {model_name!r} (only {', '.join(sorted(_VITS))})")
    dim, depth, heads = _VITS[base]
    cfg = dict(img_size=224, patch_size=16, in_chans=3, embed_dim=dim, depth=depth, num_heads=heads, mlp_ratio=4.0)
    spec = os.environ.get("TIMM_STANDIN_VIT", "")
    cfg.update(_override(spec))
    model = VisionTransformer(num_classes=num_classes, qkv_bias=True, **cfg)
    n = sum(p.numel() for p in model.parameters())
    print(f"timm stand-in: {model_name} -> ViT {cfg}, {num_classes} classes, {n} parameters"
          + (" (TIMM_STANDIN_VIT)" if spec else ""), file=sys.stderr, flush=True)
    return model
