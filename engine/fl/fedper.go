package fl

import "pfl/engine/model"

// FedPer keeps the classifier head personal and averages the body (Arivazhagan et al.,
// "Federated Learning with Personalization Layers", 2019).
func FedPer() Strategy { return roleSet{name: "fedper", roles: []model.Role{model.RoleHead}} }
