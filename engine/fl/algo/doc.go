// Package algo holds pfl's built-in federated algorithms, fedavg … pfedgp-ip: each is a
// Strategy written against engine/fl's exported lifecycle alone (engine/fl/lifecycle.go),
// one file each (its strategy and its own config section), plus one line in registry.go,
// which the package hands to fl.Register when it is loaded. A program that names
// algorithms by their config names imports it, as engine/experiment does.
package algo
