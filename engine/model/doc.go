// Package model holds pfl's client-stacked models: the tiny ViT of FedTP, timm-layout
// ViT-Ti/S/B (FedPerfix's backbone is ViT-S/16), FocalNet (TransFed), a text Transformer
// and an LSTM for Shakespeare, the ConvNet baseline with its BatchNorm variant, and
// torchvision's ResNet-50 (FedPerfix's CNN comparison).
//
// # Client-stacked
//
// Every model holds the parameters of K clients at once: each parameter tensor has a
// leading client dimension K, and Forward maps a batch [K, B, ...] to outputs [K, B, ...]
// with one set of batched ops — batched matmuls (BAddBMM) for linear layers, grouped
// convolutions with K·C groups, per-client LayerNorm affines, per-client embeddings. K = 1
// is an ordinary model. The tests prove that a K-stacked model computes exactly what K
// separate models with the same weights compute, outputs and gradients.
//
// # Roles
//
// Each parameter carries a Role and a block index, so federated algorithms choose the
// shared and personal parts by role ("attention QKV of every block", "the head") rather
// than by name strings, and parameter and communication accounting fall out of the tags.
//
// # Plug points
//
// Pass.Override supplies any parameter from outside — a hypernetwork's generated weights,
// which stay differentiable back to the hypernetwork. ViTs also take FedPerfix's prefixes
// on K/V in their last blocks (PrefixConfig: its parallel adapter, Eq. 4, or the vanilla
// prefixes of its ablation, a linear layer or learnable prefix tokens, Eq. 3; added to K and
// V as the official code does, or concatenated as extra keys as the paper writes, Eq. 5),
// deep prompt tokens, and MLP adapters (MLPAdapterConfig, one per block or one shared).
package model
