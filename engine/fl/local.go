package fl

import "pfl/engine/model"

// Local trains every client alone: every parameter is personal and nothing is aggregated.
type localStrategy struct{}

// Local returns the no-communication baseline.
func Local() Strategy { return localStrategy{} }

func (localStrategy) Name() string                 { return "local" }
func (localStrategy) Personal(p *model.Param) bool { return true }
