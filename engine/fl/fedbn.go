package fl

import "pfl/engine/model"

// FedBN keeps normalization layers local — BatchNorm affines and running statistics for
// the ConvNet, LayerNorm affines for ViTs (Li et al., "FedBN: Federated Learning on
// Non-IID Features via Local Batch Normalization", ICLR 2021).
func FedBN() Strategy {
	return roleSet{name: "fedbn", roles: []model.Role{model.RoleNorm, model.RoleNormStats}}
}
