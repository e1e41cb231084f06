package algo

import "pfl/engine/model"
import "pfl/engine/fl"

// Local trains every client alone: every parameter is personal and nothing is aggregated.
// Which clients train in a round follows one of the two official codes:
//   - Local (FedTP's official local_training): every client trains in every round (the
//     configured participation does not apply: Run's clients per round become all
//     clients that can train), so a run of R rounds gives each client R·epochs local
//     epochs.
//   - LocalSampled (FedPerfix's official Local server, PFLlib's): only the round's sampled
//     clients train, as in every other algorithm, so each client trains about
//     R·participation·epochs local epochs; a client never sampled keeps its initial model.
type localStrategy struct{ sampled bool }

// Local returns the no-communication baseline in which every client trains every round.
func Local() fl.Strategy { return localStrategy{} }

// LocalSampled returns the no-communication baseline in which only the sampled clients
// train.
func LocalSampled() fl.Strategy { return localStrategy{sampled: true} }

func (localStrategy) Name() string                 { return "local" }
func (localStrategy) Personal(p *model.Param) bool { return true }

// PrepareHooks make every client train every round unless only the sampled clients train.
func (s localStrategy) PrepareHooks() fl.PrepareHooks {
	return fl.PrepareHooks{EveryClient: !s.sampled}
}
