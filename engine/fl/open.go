package fl

import (
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// What a run's set-up asks of its strategy before and after the run exists: the model it
// builds (Shape), what its models and server state will hold (Measure), and what a finished
// run offers (Generates, HyperNet). The capabilities behind these answers are the
// lifecycle's hooks (lifecycle.go), resolved by hooksOf as a run resolves them.

// Shape is the model spec a run of strat builds from the configured s: its
// PrepareHooks.Shape adds a plug-in with the algorithm's defaults or refuses a model it
// cannot train (TransFed: anything but a FocalNet); other strategies build s.
func Shape(strat Strategy, s model.Spec) (model.Spec, error) {
	if shape := hooksOf(strat).prep.Shape; shape != nil {
		return shape(s)
	}
	return s, nil
}

// Footprint is what a strategy's models hold per copy, counted on a model declared with
// shapes only and wrapped as the run wraps it (Ditto: two copies), in float64 so that
// absurd sizes cannot overflow.
type Footprint struct {
	Params, Personal         float64 // parameter values, and those of the personal parameters
	Tensors, PersonalTensors float64 // the tensors holding them
	Hyper                    float64 // the hypernetwork's parameters (FedTP, TransFed, pFedHN); 0 without one
	EveryClient              bool    // every client trains every round (PrepareHooks.EveryClient)
}

// Measure declares one client's model with build (gen nil: nothing is allocated), wraps it
// as a run of strat would and counts its footprint for a federation of clients. A model
// the strategy cannot wrap is counted as built: the run's start reports the error, naming
// the algorithm. strat is not bound and may serve the run afterwards.
func Measure(strat Strategy, build Builder, clients int) (Footprint, error) {
	h := hooksOf(strat)
	m, err := build(1, nil)
	if err != nil {
		return Footprint{}, err
	}
	if wrap := h.prep.Wrap; wrap != nil {
		if wrapped, err := wrap(m, Wrapping{Build: build}); err == nil {
			m = wrapped
		}
	}
	defer m.Close()
	var f Footprint
	for _, p := range m.Params().List {
		n := 1.0
		for _, d := range p.Shape {
			n *= float64(d)
		}
		f.Params += n
		f.Tensors++
		if strat.Personal(p) {
			f.Personal += n
			f.PersonalTensors++
		}
	}
	if h.gen != nil && h.gen.ParamCount != nil {
		f.Hyper = h.gen.ParamCount(m, clients)
	}
	f.EveryClient = h.everyClient()
	return f, nil
}

// CloseStrategy frees what a strategy holds (its server state) when no run took it over.
func CloseStrategy(strat Strategy) error {
	if c := hooksOf(strat).closer; c != nil {
		return c.Close()
	}
	return nil
}

// Generates reports whether the run's server generates parameters for its clients
// (GenerateStage: FedTP, TransFed, pFedHN).
func (r *Run) Generates() bool { return r.hooks.gen != nil }

// HyperNet is the run's hypernetwork (FedTP, TransFed, pFedHN), nil without one.
func (r *Run) HyperNet() *hyper.Net {
	if r.hooks.gen != nil && r.hooks.gen.Net != nil {
		return r.hooks.gen.Net()
	}
	return nil
}
