"""Writes the golden files pfl's models are tested against, computed by PyTorch.

The FedPerfix ViTs come from third-party code, imported unmodified from checkouts that
gen.sh names: timm's own VisionTransformer (huggingface/pytorch-image-models at v0.6.7, the
timm the FedPerfix code pins, built by timm's vit_small_patch16_224 builder at a small size)
with the FedPerfix code's own prefix modules (imguangyu/FedPerfix,
system/flcore/trainmodel/prefix.py: AdapterAttention with its Adapter or VanillaPrefix) put
in the blocks as its Prefix puts them. Written here, and so not independent of pfl's authors:
the two prefix forms of the paper that the FedPerfix code does not implement (concatenated
keys and values, prefix tokens), around timm's Attention; and the weights the goldens use (in
place of timm's initialization, so that a missing bias or a swapped query and key shows).

The other models here are written from the architectures' descriptions (FedTP's tiny ViT
in the lucidrains vit-pytorch layout: patch rearrange + Linear, CLS token, learned positions,
pre-norm blocks with one bias-free to_qkv, GELU feed-forward, mlp_head = LayerNorm -> Linear;
torchvision's ResNet: Bottleneck v1.5 blocks, checked here against torchvision itself at
ResNet-50's sizes; FedTP's hypernetwork: client embeddings, a Linear trunk with ReLUs between its layers, one
Linear head per generated matrix, trained by torch.optim.SGD on the gradient
sum_i (m_i/M) J_i^T (W_i0 - W_iE)). Everything is float64 with dropout off, so the Go tests
can hold pfl to rounding-level tolerances. Run scripts/golden/gen.sh to regenerate.

Outputs (safetensors, F64 and I64):
  engine/model/testdata/golden/tiny_vit.safetensors   weights (pfl's names), inputs, labels,
                                                       logits, loss, gradients, and the
                                                       weights after three SGD steps
  engine/model/testdata/golden/convnet.safetensors    the same for pFedHN's ConvNet (no epoch)
  engine/model/testdata/golden/text_transformer.safetensors  and for the Shakespeare Transformer
  engine/model/testdata/golden/perfix_vit.safetensors  timm's ViT with the FedPerfix code's K/V
                                                       prefix adapter in its last block
  engine/model/testdata/golden/perfix_{concat,linear_zero,linear_random,tokens}.safetensors
                                                       the same ViT with the other prefixes: the
                                                       adapter's output as extra keys and values
                                                       (Eq. 5), the official code's vanilla
                                                       Linear prefix zero- and randomly
                                                       initialized, and learnable prefix tokens
                                                       (Eq. 3)
  engine/model/testdata/golden/focalnet.safetensors   microsoft/FocalNet's layout, two stages
  engine/model/testdata/golden/lstm.safetensors       the next-character LSTM (torch.nn.LSTM)
  engine/model/testdata/golden/resnet.safetensors     a small Bottleneck ResNet in torchvision's
                                                       layout: weights and BatchNorm running
                                                       statistics, a training-mode forward and
                                                       backward (batch statistics), the running
                                                       statistics it leaves, and eval-mode logits
  engine/model/testdata/golden/resnet50_torchvision.txt  torchvision's resnet50(num_classes=100)
                                                       state_dict: name, param or buffer, and
                                                       shape ("-" for a scalar) per line
  engine/hyper/testdata/golden/hyper.safetensors      hypernetwork weights, rows, deltas,
                                                       client weights, generated matrices,
                                                       gradients, and the weights and momentum
                                                       buffers after two optimizer steps
"""
import json
import os
import struct
import sys

import torch
from torch import nn

torch.set_default_dtype(torch.float64)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def write_safetensors(path, tensors, metadata=None):
    """The safetensors format: 8-byte little-endian header length, JSON header, raw data."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dtype = {torch.float64: "F64", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class Attention(nn.Module):
    def __init__(self, dim, heads, dim_head):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, n, -1))


class TinyViT(nn.Module):
    def __init__(self, image, patch, channels, dim, depth, heads, dim_head, mlp, classes):
        super().__init__()
        self.patch = patch
        n = (image // patch) ** 2
        self.patch_embed = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim))
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            self.blocks.append(nn.ModuleDict({
                "norm1": nn.LayerNorm(dim), "attn": Attention(dim, heads, dim_head),
                "norm2": nn.LayerNorm(dim), "fc1": nn.Linear(dim, mlp), "fc2": nn.Linear(mlp, dim)}))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        b, c, h, w = img.shape
        p = self.patch
        # 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'
        x = img.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p), p * p * c)
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk["attn"](blk["norm1"](x)) + x
            x = blk["fc2"](torch.nn.functional.gelu(blk["fc1"](blk["norm2"](x)))) + x
        return self.head(self.norm(x[:, 0]))

    def pfl_params(self):
        """The parameters under pfl's names, in pfl's order."""
        out = {"patch_embed.proj.weight": self.patch_embed.weight, "patch_embed.proj.bias": self.patch_embed.bias,
               "cls_token": self.cls_token, "pos_embed": self.pos_embed}
        for i, blk in enumerate(self.blocks):
            p = f"blocks.{i}."
            out.update({p + "norm1.weight": blk["norm1"].weight, p + "norm1.bias": blk["norm1"].bias,
                        p + "attn.qkv.weight": blk["attn"].to_qkv.weight,
                        p + "attn.proj.weight": blk["attn"].to_out.weight, p + "attn.proj.bias": blk["attn"].to_out.bias,
                        p + "norm2.weight": blk["norm2"].weight, p + "norm2.bias": blk["norm2"].bias,
                        p + "mlp.fc1.weight": blk["fc1"].weight, p + "mlp.fc1.bias": blk["fc1"].bias,
                        p + "mlp.fc2.weight": blk["fc2"].weight, p + "mlp.fc2.bias": blk["fc2"].bias})
        out.update({"norm.weight": self.norm.weight, "norm.bias": self.norm.bias,
                    "head.weight": self.head.weight, "head.bias": self.head.bias})
        return out


def tiny_vit():
    torch.manual_seed(1)
    cfg = dict(image=8, patch=4, channels=3, dim=16, depth=2, heads=2, dim_head=8, mlp=24, classes=3)
    m = TinyViT(**cfg)
    with torch.no_grad():  # LayerNorm affines away from 1 and 0, so that they are tested
        for name, p in m.pfl_params().items():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    params = m.pfl_params()
    out = {"w/" + k: v.detach().clone() for k, v in params.items()}
    x = torch.randn(5, 3, 8, 8)
    y = torch.tensor([0, 2, 1, 1, 0])
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    grads = torch.autograd.grad(loss, list(params.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    out.update({"grad/" + k: g for k, g in zip(params, grads)})
    # a local epoch: three SGD steps (momentum 0.9, weight decay 1e-5, lr 0.1) on fixed batches
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    batches = [(torch.randn(4, 3, 8, 8), torch.tensor([0, 1, 2, 1])) for _ in range(3)]
    for i, (bx, by) in enumerate(batches):
        out[f"epoch/x{i}"], out[f"epoch/y{i}"] = bx, by
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(bx), by).backward()
        opt.step()
    out.update({"epoch/w/" + k: v.detach().clone() for k, v in m.pfl_params().items()})
    meta = {k: str(v) for k, v in cfg.items()}
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/tiny_vit.safetensors"), out, meta)


class ConvNet(nn.Module):
    """pFedHN's LeNet-style CNN (FedTP's CNNTarget): conv 5x5 -> ReLU -> max-pool 2, twice,
    then three fully connected layers with ReLUs between them."""

    def __init__(self, channels, classes, image):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(channels, 16, 5), nn.Conv2d(16, 32, 5)
        side = ((image - 4) // 2 - 4) // 2
        self.fc1, self.fc2, self.fc3 = nn.Linear(32 * side * side, 120), nn.Linear(120, 84), nn.Linear(84, classes)

    def forward(self, x):
        pool = torch.nn.functional.max_pool2d
        x = pool(torch.relu(self.conv1(x)), 2)
        x = pool(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc3(torch.relu(self.fc2(x)))

    def pfl_params(self):
        return {f"{n}.{w}": getattr(getattr(self, n), w) for n in ("conv1", "conv2", "fc1", "fc2", "fc3") for w in ("weight", "bias")}


def convnet():
    torch.manual_seed(3)
    cfg = dict(image=16, channels=3, classes=4)
    m = ConvNet(cfg["channels"], cfg["classes"], cfg["image"])
    params = m.pfl_params()
    out = {"w/" + k: v.detach().clone() for k, v in params.items()}
    x = torch.randn(6, 3, 16, 16)
    y = torch.tensor([0, 3, 1, 2, 2, 0])
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    grads = torch.autograd.grad(loss, list(params.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    out.update({"grad/" + k: g for k, g in zip(params, grads)})
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/convnet.safetensors"), out,
                      {k: str(v) for k, v in cfg.items()})


class TextTransformer(nn.Module):
    """FedTP's Shakespeare Transformer: token embedding + sinusoidal positions -> LayerNorm
    (eps 1e-6) -> post-norm layers (separate bias-free w_qs, w_ks, w_vs and fc; attention
    scaled by d_k^-0.5; ReLU feed-forward), output projection without bias scaled by
    d_model^-0.5; with the causal mask pfl adds (the reference passes none)."""

    def __init__(self, vocab, dim, ffn, heads, dim_head, depth, max_len):
        super().__init__()
        self.heads, self.dim_head, self.dim = heads, dim_head, dim
        inner = heads * dim_head
        self.emb = nn.Parameter(torch.randn(vocab, dim) * 0.3)
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        i = torch.arange(dim, dtype=torch.float64)
        angle = pos / torch.pow(10000.0, 2 * torch.div(i, 2, rounding_mode="floor") / dim)
        self.pos_table = torch.where(i.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.ModuleDict({
                "w_qs": nn.Linear(dim, inner, bias=False), "w_ks": nn.Linear(dim, inner, bias=False),
                "w_vs": nn.Linear(dim, inner, bias=False), "fc": nn.Linear(inner, dim, bias=False),
                "ln1": nn.LayerNorm(dim, eps=1e-6), "w_1": nn.Linear(dim, ffn), "w_2": nn.Linear(ffn, dim),
                "ln2": nn.LayerNorm(dim, eps=1e-6)}))
        self.prj = nn.Linear(dim, vocab, bias=False)

    def forward(self, x):
        b, t = x.shape
        h = self.ln(self.emb[x] + self.pos_table[:t])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        for l in self.layers:
            split = lambda z: z.reshape(b, t, self.heads, self.dim_head).transpose(1, 2)
            q, k, v = split(l["w_qs"](h)), split(l["w_ks"](h)), split(l["w_vs"](h))
            att = (q @ k.transpose(-1, -2)) / self.dim_head ** 0.5
            att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            a = l["fc"]((att @ v).transpose(1, 2).reshape(b, t, -1))
            h = l["ln1"](a + h)
            h = l["ln2"](l["w_2"](torch.relu(l["w_1"](h))) + h)
        return self.prj(h) * self.dim ** -0.5

    def pfl_params(self):
        out = {"encoder.src_word_emb.weight": self.emb, "encoder.position_enc.pos_table": self.pos_table,
               "encoder.layer_norm.weight": self.ln.weight, "encoder.layer_norm.bias": self.ln.bias}
        for i, l in enumerate(self.layers):
            p = f"encoder.layer_stack.{i}."
            out.update({p + "slf_attn.w_qs.weight": l["w_qs"].weight, p + "slf_attn.w_ks.weight": l["w_ks"].weight,
                        p + "slf_attn.w_vs.weight": l["w_vs"].weight, p + "slf_attn.fc.weight": l["fc"].weight,
                        p + "slf_attn.layer_norm.weight": l["ln1"].weight, p + "slf_attn.layer_norm.bias": l["ln1"].bias,
                        p + "pos_ffn.w_1.weight": l["w_1"].weight, p + "pos_ffn.w_1.bias": l["w_1"].bias,
                        p + "pos_ffn.w_2.weight": l["w_2"].weight, p + "pos_ffn.w_2.bias": l["w_2"].bias,
                        p + "pos_ffn.layer_norm.weight": l["ln2"].weight, p + "pos_ffn.layer_norm.bias": l["ln2"].bias})
        out["trg_word_prj.weight"] = self.prj.weight
        return out


def text_transformer():
    torch.manual_seed(4)
    cfg = dict(vocab=100, dim=16, ffn=24, heads=2, dim_head=8, depth=2, seq_len=6)
    m = TextTransformer(cfg["vocab"], cfg["dim"], cfg["ffn"], cfg["heads"], cfg["dim_head"], cfg["depth"], 200)
    with torch.no_grad():
        for name, p in m.pfl_params().items():
            if "layer_norm" in name and p.requires_grad:
                p.add_(0.1 * torch.randn_like(p))
    params = {k: v for k, v in m.pfl_params().items()}
    trainable = {k: v for k, v in params.items() if v.requires_grad}
    out = {"w/" + k: v.detach().clone() for k, v in params.items()}
    x = torch.randint(0, cfg["vocab"], (3, cfg["seq_len"]))
    y = torch.randint(0, cfg["vocab"], (3, cfg["seq_len"]))
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab"]), y.reshape(-1))
    grads = torch.autograd.grad(loss, list(trainable.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    out.update({"grad/" + k: g for k, g in zip(trainable, grads)})
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/text_transformer.safetensors"), out,
                      {k: str(v) for k, v in cfg.items()})


def perturb_norms(params):
    """LayerNorm affines away from 1 and 0, so that a swapped or missing affine is seen."""
    with torch.no_grad():
        for name, p in params.items():
            if "norm" in name and p.requires_grad:
                p.add_(0.1 * torch.randn_like(p))


def forward_backward(m, x, y, classes):
    """The golden record of one batch: weights, inputs, logits, mean cross-entropy and the
    gradient of every parameter (under pfl's names: the model's pfl_params, or for timm's ViT
    its own parameter names, which are pfl's)."""
    params = m.pfl_params() if hasattr(m, "pfl_params") else dict(m.named_parameters())
    out = {"w/" + k: v.detach().clone() for k, v in params.items()}
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, classes), y.reshape(-1))
    grads = torch.autograd.grad(loss, list(params.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    out.update({"grad/" + k: g for k, g in zip(params, grads)})
    return out


# timm's ViT and FedPerfix's prefixes come from their own code: gen.sh passes checkouts of
# huggingface/pytorch-image-models at TIMM_COMMIT (tag v0.6.7, the timm the FedPerfix code pins
# in its requirements.txt) and of imguangyu/FedPerfix at FEDPERFIX_COMMIT, imported as they
# are. Only the prefixes of the paper that the FedPerfix code does not implement (the
# concatenated form, Eq. 5, and prefix tokens, Eq. 3) are written here, around timm's Attention.
TIMM_REPO, TIMM_COMMIT, TIMM_VERSION = "huggingface/pytorch-image-models", "7cd4204a289cd0dddad925c076cdb96ae9670e87", "0.6.7"
FEDPERFIX_REPO, FEDPERFIX_COMMIT = "imguangyu/FedPerfix", "5acbd0c58c43b4b4a06bff51d1f61670917b8a0e"
REFS = {}  # "vit": timm.models.vision_transformer, "prefix": FedPerfix's flcore.trainmodel.prefix


def git_head(path):
    import subprocess
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def import_references(timm_dir, fedperfix_dir):
    """Imports timm's vision_transformer and the FedPerfix code's prefix module from the
    checkouts (never writing into them); exits unless they are the pinned commits."""
    for path, repo, commit in ((timm_dir, TIMM_REPO, TIMM_COMMIT), (fedperfix_dir, FEDPERFIX_REPO, FEDPERFIX_COMMIT)):
        head = git_head(path) if path else None
        if head != commit:
            sys.exit(f"gen.py: {path or '(none given)'} is at {head or 'no git commit'}, not {repo} at {commit} "
                     "(see scripts/golden/gen.sh)")
    sys.dont_write_bytecode = True
    sys.path[:0] = [os.path.abspath(timm_dir), os.path.join(os.path.abspath(fedperfix_dir), "system")]
    import timm
    from timm.models import vision_transformer
    from flcore.trainmodel import prefix  # imports timm.models.vision_transformer itself
    if timm.__version__ != TIMM_VERSION or not timm.__file__.startswith(os.path.abspath(timm_dir)):
        sys.exit(f"gen.py: imported timm {timm.__version__} from {timm.__file__}, want {TIMM_VERSION} from {timm_dir}")
    REFS.update(vit=vision_transformer, prefix=prefix)
    print(f"timm {timm.__version__} ({TIMM_COMMIT}), FedPerfix {FEDPERFIX_COMMIT}", file=sys.stderr)


class ConcatPrefixAttention(nn.Module):
    """FedPerfix's paper forms that its code lacks, built around timm's Attention as the code's
    AdapterAttention is (its qkv, num_heads, scale, attn_drop, proj, proj_drop): s·P_k and s·P_v
    concatenated before the keys and values along the sequence. P comes from the FedPerfix
    code's own Adapter (the K/V part of its output: up(tanh(down(x))), Eq. 5) or from learnable
    tokens prefix_k, prefix_v [length, dim] drawn U(-1, 1), pfl's default for them (Eq. 3)."""

    def __init__(self, base, dim, scale, mid=0, length=0):
        super().__init__()
        for name in ("qkv", "num_heads", "scale", "attn_drop", "proj", "proj_drop"):
            setattr(self, name, getattr(base, name))
        self.dim, self.p_scale = dim, scale
        if mid:
            self.adapter = REFS["prefix"].Adapter(dim, mid_dim=mid)
        else:
            self.prefix_k = nn.Parameter(torch.empty(length, dim).uniform_(-1, 1))
            self.prefix_v = nn.Parameter(torch.empty(length, dim).uniform_(-1, 1))

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        if hasattr(self, "adapter"):
            pk, pv = (self.p_scale * self.adapter(x)[..., self.dim:]).chunk(2, dim=-1)  # the Adapter's [0, ΔK, ΔV]
        else:
            pk, pv = (self.p_scale * p.expand(b, -1, -1) for p in (self.prefix_k, self.prefix_v))
        split = lambda z: z.reshape(b, z.shape[1], self.num_heads, c // self.num_heads).transpose(1, 2)
        k, v = torch.cat([split(pk), k], dim=2), torch.cat([split(pv), v], dim=2)
        attn = self.attn_drop(((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1))
        return self.proj_drop(self.proj((attn @ v).transpose(1, 2).reshape(b, n, c)))


def perfix_model(image, patch, channels, dim, depth, heads, mlp, classes, prefix_blocks, mid, scale,
                 kind="adapter", form="add", init="default", length=0):
    """timm's vit_small_patch16_224, built by timm's own builder at a small size, with a prefix
    in its last `prefix_blocks` blocks, where FedPerfix's Prefix puts it (prefix_depth). kind
    "adapter" form "add": the FedPerfix code's AdapterAttention with its Adapter (qkv(x) +
    s·[0, up(tanh(down(x)))]); kind "linear": AdapterAttention with its VanillaPrefix, one
    Linear(dim, 2·dim), zero-initialized for init "zero" (--vanilla zero) or PyTorch's default
    (--vanilla random); form "concat" and kind "tokens": ConcatPrefixAttention. Then weights
    that make a sharp test (golden_weights)."""
    m = REFS["vit"]._create_vision_transformer(
        "vit_small_patch16_224", pretrained=False, img_size=image, patch_size=patch, in_chans=channels, embed_dim=dim,
        depth=depth, num_heads=heads, mlp_ratio=mlp / dim, num_classes=classes)
    assert m.blocks[0].mlp.fc1.out_features == mlp and m.blocks[0].attn.qkv.bias is not None
    keep = []
    for i, blk in enumerate(m.blocks):
        if depth - i > prefix_blocks:
            continue
        if kind == "tokens":
            blk.attn = ConcatPrefixAttention(blk.attn, dim, scale, length=length)
        elif form == "concat":
            blk.attn = ConcatPrefixAttention(blk.attn, dim, scale, mid=mid)
        else:
            vanilla = "-" if kind == "adapter" else ("zero" if init == "zero" else "random")
            blk.attn = REFS["prefix"].AdapterAttention(blk.attn, dim, mid_dim=mid, p_scale=scale, vanilla=vanilla)
            if vanilla == "zero":
                keep.append(blk.attn.adapter.kv)
    golden_weights(m, keep)
    return m


def golden_weights(m, keep):
    """Weights that make a sharp test, in place of timm's initialization (which zeroes every
    bias, draws the class token at 1e-6 and every weight at 0.02: a missing bias or a swapped
    query and key would hardly move the outputs): every Linear and the patch Conv2d redrawn
    by PyTorch's default (weights and biases U(±1/√fan_in)), the class token and positions
    N(0, 0.1²), LayerNorm affines moved by N(0, 0.1²). Modules in keep (the zero-initialized
    vanilla prefix) stay as built; prefix tokens keep their U(-1, 1)."""
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.Linear, nn.Conv2d)) and not any(mod is k for k in keep):
                mod.reset_parameters()
        m.cls_token.copy_(0.1 * torch.randn_like(m.cls_token))
        m.pos_embed.copy_(0.1 * torch.randn_like(m.pos_embed))
    perturb_norms(dict(m.named_parameters()))


def reference_meta(cfg):
    meta = {k: str(v) for k, v in cfg.items()}
    meta.update(timm=f"{TIMM_REPO}@{TIMM_COMMIT}", fedperfix=f"{FEDPERFIX_REPO}@{FEDPERFIX_COMMIT}")
    return meta


def perfix_vit():
    torch.manual_seed(5)
    cfg = dict(image=8, patch=4, channels=3, dim=16, depth=2, heads=2, mlp=32, classes=3,
               prefix_blocks=1, mid=6, scale=1.5)
    m = perfix_model(**cfg)
    out = forward_backward(m, torch.randn(5, 3, 8, 8), torch.tensor([2, 0, 1, 1, 2]), cfg["classes"])
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/perfix_vit.safetensors"), out,
                      reference_meta(cfg))


def perfix_variant(name, seed, **prefix):
    """perfix_vit's model with another prefix, in both blocks (so the first block's prefix is
    tested too): the record of one batch, with the prefix's config as metadata."""
    torch.manual_seed(seed)
    cfg = dict(image=8, patch=4, channels=3, dim=16, depth=2, heads=2, mlp=32, classes=3,
               prefix_blocks=2, mid=0, scale=1.5, kind="adapter", form="add", init="default", length=0)
    cfg.update(prefix)
    m = perfix_model(**cfg)
    out = forward_backward(m, torch.randn(5, 3, 8, 8), torch.tensor([1, 2, 0, 2, 1]), cfg["classes"])
    write_safetensors(os.path.join(ROOT, f"engine/model/testdata/golden/{name}.safetensors"), out,
                      reference_meta(cfg))


def perfix_variants():
    perfix_variant("perfix_concat", 8, kind="adapter", mid=6, form="concat")  # Eq. 4, 5
    perfix_variant("perfix_linear_zero", 9, kind="linear", init="zero")  # Prefix-Z, official
    perfix_variant("perfix_linear_random", 10, kind="linear")  # Prefix-R, official
    perfix_variant("perfix_tokens", 11, kind="tokens", form="concat", length=3)  # Eq. 3


class FocalModulation(nn.Module):
    """microsoft/FocalNet's focal modulation (classification/focalnet.py, defaults: bias,
    no post-LN, no normalized modulator) on channels-last x [B, H, W, C]."""

    def __init__(self, dim, window, levels):
        super().__init__()
        self.levels = levels
        self.f = nn.Linear(dim, 2 * dim + levels + 1)
        self.h = nn.Conv2d(dim, dim, 1)
        self.proj = nn.Linear(dim, dim)
        self.focal = nn.ModuleList(
            nn.Conv2d(dim, dim, 2 * l + window, padding=(2 * l + window) // 2, groups=dim, bias=False)
            for l in range(levels))

    def forward(self, x):
        c = x.shape[-1]
        q, ctx, gates = torch.split(self.f(x).permute(0, 3, 1, 2), (c, c, self.levels + 1), 1)
        ctx_all = 0
        for l, conv in enumerate(self.focal):
            ctx = torch.nn.functional.gelu(conv(ctx))
            ctx_all = ctx_all + ctx * gates[:, l:l + 1]
        glob = torch.nn.functional.gelu(ctx.mean(2, keepdim=True).mean(3, keepdim=True))
        ctx_all = ctx_all + glob * gates[:, self.levels:]
        return self.proj((q * self.h(ctx_all)).permute(0, 2, 3, 1))


class FocalNet(nn.Module):
    """FocalNet: Conv2d patch stem + LayerNorm, stages of pre-LN blocks (modulation, then a
    GELU MLP), Conv2d 2x2/2 + LayerNorm between stages, final LayerNorm, average pool, head."""

    def __init__(self, image, patch, channels, dims, depths, levels, window, mlp_ratio, classes):
        super().__init__()
        self.stem, self.stem_norm = nn.Conv2d(channels, dims[0], patch, stride=patch), nn.LayerNorm(dims[0])
        self.stages = nn.ModuleList()
        for si, (d, depth) in enumerate(zip(dims, depths)):
            st = nn.ModuleDict({"blocks": nn.ModuleList(nn.ModuleDict({
                "norm1": nn.LayerNorm(d), "mod": FocalModulation(d, window, levels), "norm2": nn.LayerNorm(d),
                "fc1": nn.Linear(d, mlp_ratio * d), "fc2": nn.Linear(mlp_ratio * d, d)}) for _ in range(depth))})
            if si + 1 < len(dims):
                st["down"], st["down_norm"] = nn.Conv2d(d, dims[si + 1], 2, stride=2), nn.LayerNorm(dims[si + 1])
            self.stages.append(st)
        self.norm, self.head = nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], classes)

    def forward(self, img):
        x = self.stem_norm(self.stem(img).permute(0, 2, 3, 1))  # [B, H, W, C]
        for st in self.stages:
            for b in st["blocks"]:
                x = x + b["mod"](b["norm1"](x))
                x = x + b["fc2"](torch.nn.functional.gelu(b["fc1"](b["norm2"](x))))
            if "down" in st:
                x = st["down_norm"](st["down"](x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1))
        return self.head(self.norm(x).mean((1, 2)))

    def pfl_params(self):
        out = {"patch_embed.proj.weight": self.stem.weight, "patch_embed.proj.bias": self.stem.bias,
               "patch_embed.norm.weight": self.stem_norm.weight, "patch_embed.norm.bias": self.stem_norm.bias}
        for si, st in enumerate(self.stages):
            for bi, b in enumerate(st["blocks"]):
                p = f"layers.{si}.blocks.{bi}."
                mod = b["mod"]
                out.update({p + "norm1.weight": b["norm1"].weight, p + "norm1.bias": b["norm1"].bias,
                            p + "modulation.f.weight": mod.f.weight, p + "modulation.f.bias": mod.f.bias})
                out.update({f"{p}modulation.focal_layers.{l}.0.weight": conv.weight for l, conv in enumerate(mod.focal)})
                out.update({p + "modulation.h.weight": mod.h.weight, p + "modulation.h.bias": mod.h.bias,
                            p + "modulation.proj.weight": mod.proj.weight, p + "modulation.proj.bias": mod.proj.bias,
                            p + "norm2.weight": b["norm2"].weight, p + "norm2.bias": b["norm2"].bias,
                            p + "mlp.fc1.weight": b["fc1"].weight, p + "mlp.fc1.bias": b["fc1"].bias,
                            p + "mlp.fc2.weight": b["fc2"].weight, p + "mlp.fc2.bias": b["fc2"].bias})
            if "down" in st:
                p = f"layers.{si}.downsample."
                out.update({p + "proj.weight": st["down"].weight, p + "proj.bias": st["down"].bias,
                            p + "norm.weight": st["down_norm"].weight, p + "norm.bias": st["down_norm"].bias})
        out.update({"norm.weight": self.norm.weight, "norm.bias": self.norm.bias,
                    "head.weight": self.head.weight, "head.bias": self.head.bias})
        return out


def focalnet():
    torch.manual_seed(6)
    # two stages (so the downsampler is tested), three levels (kernels 3, 5, 7 on 4x4 and 2x2 maps)
    cfg = dict(image=8, patch=2, channels=3, dims=[8, 16], depths=[1, 1], levels=3, window=3, mlp_ratio=2, classes=4)
    m = FocalNet(**cfg)
    perturb_norms(m.pfl_params())
    out = forward_backward(m, torch.randn(4, 3, 8, 8), torch.tensor([3, 0, 1, 2]), cfg["classes"])
    meta = {k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in cfg.items()}
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/focalnet.safetensors"), out, meta)


class CharLSTM(nn.Module):
    """FedTP's (and LEAF's) NextCharacterLSTM: Embedding -> nn.LSTM (batch first) -> Linear."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.encoder = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.decoder(self.rnn(self.encoder(x))[0])

    def pfl_params(self):
        out = {"encoder.weight": self.encoder.weight}
        out.update({"rnn." + k: v for k, v in self.rnn.named_parameters()})
        out.update({"decoder.weight": self.decoder.weight, "decoder.bias": self.decoder.bias})
        return out


def lstm():
    torch.manual_seed(7)
    cfg = dict(vocab=20, embed=4, hidden=6, layers=2, seq_len=5)
    m = CharLSTM(cfg["vocab"], cfg["embed"], cfg["hidden"], cfg["layers"])
    x = torch.randint(0, cfg["vocab"], (3, cfg["seq_len"]))
    y = torch.randint(0, cfg["vocab"], (3, cfg["seq_len"]))
    out = forward_backward(m, x, y, cfg["vocab"])
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/lstm.safetensors"), out,
                      {k: str(v) for k, v in cfg.items()})


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (ResNet v1.5): 1x1 conv -> BN -> ReLU -> 3x3 conv carrying the
    stride -> BN -> ReLU -> 1x1 conv to 4x the width -> BN, plus the shortcut (a 1x1 conv
    with the stride + BN where the shape changes, else the identity), then ReLU."""

    def __init__(self, inp, width, stride):
        super().__init__()
        out = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(inp, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return torch.relu(h + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """torchvision's ResNet with Bottleneck blocks (He et al., 2016): conv 7x7/2 without bias
    -> BN -> ReLU -> max-pool 3x3/2 pad 1, stages layer1.. of Bottlenecks (stride 2 on the
    first block of every stage but the first), global average pool, fc. The stem width and
    the stage widths are free here (torchvision fixes 64 and 64, 128, 256, 512)."""

    def __init__(self, image, channels, stem, widths, blocks, classes):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(channels, stem, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(stem)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layers, inp = [], stem
        for i, (w, n) in enumerate(zip(widths, blocks)):
            layer = nn.Sequential(*[Bottleneck(inp if b == 0 else 4 * w, w, 2 if i > 0 and b == 0 else 1) for b in range(n)])
            setattr(self, f"layer{i + 1}", layer)
            self.layers.append(layer)
            inp = 4 * w
        self.fc = nn.Linear(inp, classes)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        for layer in self.layers:
            x = layer(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    def pfl_params(self):
        """Parameters and running statistics under torchvision's names, in its state_dict's
        order, without num_batches_tracked (which pfl does not keep)."""
        return {k: v for k, v in self.state_dict(keep_vars=True).items() if not k.endswith("num_batches_tracked")}


def check_against_torchvision():
    """The ResNet above at ResNet-50's sizes has torchvision's resnet50 names, shapes and
    order, and with its weights computes its outputs and running statistics, in training
    and evaluation mode. Writes torchvision's state_dict listing for the Go tests."""
    import torchvision

    torch.manual_seed(9)
    ref = torchvision.models.resnet50(num_classes=100)
    mine = ResNet(224, 3, 64, [64, 128, 256, 512], [3, 4, 6, 3], 100)
    sd = ref.state_dict()
    want = [(k, tuple(v.shape)) for k, v in sd.items() if not k.endswith("num_batches_tracked")]
    got = [(k, tuple(v.shape)) for k, v in mine.pfl_params().items()]
    assert got == want, "the golden ResNet's state_dict differs from torchvision's"
    mine.load_state_dict(sd)
    x = torch.randn(2, 3, 64, 64)
    for train in (True, False):
        ref.train(train)
        mine.train(train)
        with torch.no_grad():
            assert torch.allclose(mine(x), ref(x), rtol=0, atol=1e-12), "outputs differ from torchvision's"
        for k, v in ref.state_dict().items():
            assert torch.equal(mine.state_dict()[k], v), k
    trained = {k for k, _ in ref.named_parameters()}
    with open(os.path.join(ROOT, "engine/model/testdata/golden/resnet50_torchvision.txt"), "w") as f:
        for k, v in sd.items():
            kind = "param" if k in trained else "buffer"
            f.write(f"{k} {kind} {','.join(map(str, v.shape)) or '-'}\n")


def resnet():
    check_against_torchvision()
    torch.manual_seed(8)
    # two stages, blocks 1 and 2: a projection shortcut with stride 1 (the width changes), one
    # with stride 2, and an identity shortcut; 16x16 -> 8x8 (stem) -> 4x4 (pool) -> 2x2
    cfg = dict(image=16, channels=3, stem=4, widths=[4, 8], blocks=[1, 2], classes=5)
    m = ResNet(**cfg)
    with torch.no_grad():  # BatchNorm affines and running statistics away from 1 and 0
        for name, p in m.pfl_params().items():
            if name.endswith(("bn1.weight", "bn2.weight", "bn3.weight", "downsample.1.weight", "running_var")):
                p.copy_(1 + 0.2 * torch.rand_like(p) - 0.1)
            elif name.endswith(("bias", "running_mean")) and not name.startswith("fc."):
                p.add_(0.1 * torch.randn_like(p))
    state = m.pfl_params()
    params = {k: v for k, v in state.items() if v.requires_grad}
    out = {"w/" + k: v.detach().clone() for k, v in state.items()}
    x = torch.randn(4, 3, 16, 16)
    y = torch.tensor([4, 0, 2, 1])
    m.train()  # batch statistics; the running statistics move (momentum 0.1, unbiased variance)
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    grads = torch.autograd.grad(loss, list(params.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    out.update({"grad/" + k: g for k, g in zip(params, grads)})
    out.update({"stats/" + k: v.detach().clone() for k, v in state.items() if "running" in k})
    m.eval()
    with torch.no_grad():
        out["eval_logits"] = m(x)
    meta = {k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in cfg.items()}
    write_safetensors(os.path.join(ROOT, "engine/model/testdata/golden/resnet.safetensors"), out, meta)


def hypernetwork():
    torch.manual_seed(2)
    clients, embed, hidden, layers = 4, 5, 7, 3
    targets = {"blocks.0.attn.qkv.weight": (6, 4), "blocks.1.attn.qkv.weight": (6, 4)}
    emb = nn.Embedding(clients, embed)
    trunk = [nn.Linear(embed if l == 0 else hidden, hidden) for l in range(layers)]
    heads = {n: nn.Linear(hidden, s[0] * s[1]) for n, s in targets.items()}
    params = {"embeddings": emb.weight}
    for l, lin in enumerate(trunk):
        params[f"mlp.{l}.weight"], params[f"mlp.{l}.bias"] = lin.weight, lin.bias
    for n, lin in heads.items():
        params[f"heads.{n}.weight"], params[f"heads.{n}.bias"] = lin.weight, lin.bias
    out = {"w/" + k: v.detach().clone() for k, v in params.items()}
    rows = torch.tensor([1, 3])
    weights = torch.tensor([0.25, 0.75])

    def generate():
        h = emb(rows)
        for l, lin in enumerate(trunk):
            h = lin(torch.relu(h) if l > 0 else h)
        return [heads[n](h).reshape(len(rows), *s) for n, s in targets.items()]

    gen = generate()
    deltas = [torch.randn_like(g) for g in gen]
    grads = torch.autograd.grad(gen, list(params.values()),
                                grad_outputs=[d * weights.reshape(-1, 1, 1) for d in deltas])
    out.update({"rows": rows, "weights": weights})
    out.update({f"delta/{n}": d for n, d in zip(targets, deltas)})
    out.update({f"gen/{n}": g for n, g in zip(targets, gen)})
    out.update({"grad/" + k: g for k, g in zip(params, grads)})
    opt = torch.optim.SGD(list(params.values()), lr=0.1, momentum=0.9, weight_decay=1e-3)
    for _ in range(2):  # the same gradient twice: the second step reads the momentum
        for p, g in zip(params.values(), grads):
            p.grad = g.clone()
        opt.step()
    out.update({"step/" + k: v.detach().clone() for k, v in params.items()})
    out.update({"buf/" + k: opt.state[v]["momentum_buffer"] for k, v in params.items()})
    meta = {"clients": str(clients), "embed": str(embed), "hidden": str(hidden), "layers": str(layers),
            "lr": "0.1", "momentum": "0.9", "weight_decay": "0.001"}
    write_safetensors(os.path.join(ROOT, "engine/hyper/testdata/golden/hyper.safetensors"), out, meta)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timm", required=True, help=f"a {TIMM_REPO} checkout at {TIMM_COMMIT}")
    ap.add_argument("--fedperfix", required=True, help=f"an {FEDPERFIX_REPO} checkout at {FEDPERFIX_COMMIT}")
    a = ap.parse_args()
    print("torch", torch.__version__, file=sys.stderr)
    import_references(a.timm, a.fedperfix)
    tiny_vit()
    convnet()
    text_transformer()
    perfix_vit()
    focalnet()
    lstm()
    resnet()
    hypernetwork()
    perfix_variants()
