package algo

import "pfl/engine/model"
import "pfl/engine/fl"

// FedBN keeps normalization layers local — BatchNorm affines and running statistics for
// the ConvNet, LayerNorm affines for ViTs (Li et al., "FedBN: Federated Learning on
// Non-IID Features via Local Batch Normalization", ICLR 2021).
func FedBN() fl.Strategy {
	return roleSet{name: "fedbn", roles: []model.Role{model.RoleNorm, model.RoleNormStats}}
}
