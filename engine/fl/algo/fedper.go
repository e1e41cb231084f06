package algo

import "pfl/engine/model"
import "pfl/engine/fl"

// FedPer keeps the classifier head personal and averages the body (Arivazhagan et al.,
// "Federated Learning with Personalization Layers", 2019).
func FedPer() fl.Strategy { return roleSet{name: "fedper", roles: []model.Role{model.RoleHead}} }

// roleSet is the shared shape of the role-based algorithms: the parameters of its roles
// stay with their clients, the rest is averaged.
type roleSet struct {
	name  string
	roles []model.Role
}

func (r roleSet) Name() string { return r.name }

func (r roleSet) Personal(p *model.Param) bool {
	for _, role := range r.roles {
		if p.Role == role {
			return true
		}
	}
	return false
}
