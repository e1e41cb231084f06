package fl

import "pfl/engine/model"

// Local trains every client alone: every parameter is personal and nothing is aggregated.
// As FedTP's official local_training does, every client trains in every round (the
// configured participation does not apply: Run's clients per round become all clients
// that can train), so a Local run of R rounds gives each client R·epochs local epochs.
type localStrategy struct{}

// Local returns the no-communication baseline.
func Local() Strategy { return localStrategy{} }

func (localStrategy) Name() string                 { return "local" }
func (localStrategy) Personal(p *model.Param) bool { return true }

// EveryClient is true: every client trains every round.
func (localStrategy) EveryClient() bool { return true }
