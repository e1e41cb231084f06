package main

import (
	"fmt"
	"math"
	"os"

	"pfl/engine/fl"
	"pfl/engine/fl/algo"
)

// This file is an algorithm added to pfl as every algorithm is: a file (its settings
// and its strategy) and one registry line, here the Register call, made only in the
// child processes of TestAddingAnAlgorithm (toyAlgorithmEnv set) so that every other
// test sees the registry as shipped. toyprox is FedProx with its μ in a section of its
// own, algorithm.toyprox.mu, which TestAddingAnAlgorithm checks pfl accepts, defaults,
// validates, documents and hands to the strategy with no other change.

// toyAlgorithmEnv makes a child process register toyprox.
const toyAlgorithmEnv = "PFL_TEST_TOY_ALGORITHM"

// toyProxSettings are toyprox's own section, algorithm.toyprox.
type toyProxSettings struct {
	// Mu is the proximal weight μ of μ/2‖w − w_global‖²; default 0.5.
	Mu float64 `mapstructure:"mu" json:"mu"`
}

// Validate refuses a μ that is negative or not a number, naming the key.
func (c toyProxSettings) Validate() error {
	if !(c.Mu >= 0) || math.IsInf(c.Mu, 1) {
		return fmt.Errorf("algorithm.toyprox.mu: %v; want a finite number >= 0", c.Mu)
	}
	return nil
}

// toyProx is FedProx under its own name.
type toyProx struct{ algo.FedProx }

// Name is the algorithm's name as configs spell it.
func (toyProx) Name() string { return "toyprox" }

func init() {
	if os.Getenv(toyAlgorithmEnv) != "1" {
		return
	}
	err := fl.Register(fl.Algorithm{Name: "toyprox", Summary: "FedProx with μ in a section of its own (a test's algorithm)", Paper: "Li et al., MLSys 2020, Eq. 2",
		New: func(o fl.Options) fl.Strategy { return toyProx{algo.FedProx{Mu: o.Own.(toyProxSettings).Mu}} }, Own: fl.OwnSection{Key: "toyprox", Default: toyProxSettings{Mu: 0.5}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}
