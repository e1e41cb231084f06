package algo

import "pfl/engine/fl"

// FedAvg averages every parameter over the sampled clients, weighted by their sample
// counts (McMahan et al., "Communication-Efficient Learning of Deep Networks from
// Decentralized Data", AISTATS 2017). Nothing is personal.
func FedAvg() fl.Strategy { return roleSet{name: "fedavg"} }
