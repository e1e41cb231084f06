package algo

import "pfl/engine/model"
import "pfl/engine/fl"

// VanillaPersonalizedT keeps every block's self-attention Q/K/V projections with their
// client and averages everything else: FedTP's "Vanilla Personalized-T" baseline, the
// same split as FedTP without the hypernetwork.
func VanillaPersonalizedT() fl.Strategy {
	return roleSet{name: "vanilla-t", roles: []model.Role{model.RoleAttnQKV}}
}

// VanillaAttention keeps all attention layers (Q/K/V and output projections) and the head
// local: FedPerfix's "Vanilla Attention" baseline.
func VanillaAttention() fl.Strategy {
	return roleSet{name: "vanilla-attn", roles: []model.Role{model.RoleAttnQKV, model.RoleAttnOut, model.RoleHead}}
}
