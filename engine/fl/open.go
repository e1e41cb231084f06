package fl

import (
	"io"

	"pfl/engine/hyper"
	"pfl/engine/model"
)

// What a run's set-up asks of its strategy before and after the run exists: the model it
// builds (Shape), what its models and server state will hold (Measure), and what a finished
// run offers (Generates, HyperNet). The capabilities behind these answers are the
// lifecycle's hooks (lifecycle.go); asking fl keeps every type assertion on a strategy in
// this package.

// Shape is the model spec a run of strat builds from the configured s: a Shaper adds its
// plug-in with the algorithm's defaults or refuses a model it cannot train (TransFed:
// anything but a FocalNet); other strategies build s.
func Shape(strat Strategy, s model.Spec) (model.Spec, error) {
	if sh, ok := strat.(Shaper); ok {
		return sh.Shape(s)
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
	EveryClient              bool    // every client trains every round (EveryRound)
}

// hyperCounter is a generative strategy that can count its hypernetwork's parameters for a
// model and a number of clients without building it.
type hyperCounter interface {
	HyperParams(m model.Model, clients int) float64
}

// Measure declares one client's model with build (gen nil: nothing is allocated), wraps it
// as a run of strat would and counts its footprint for a federation of clients. A model
// the strategy cannot wrap is counted as built: the run's start reports the error, naming
// the algorithm. strat is not bound and may serve the run afterwards.
func Measure(strat Strategy, build Builder, clients int) (Footprint, error) {
	m, err := build(1, nil)
	if err != nil {
		return Footprint{}, err
	}
	if w, ok := strat.(Wrapper); ok {
		if wrapped, err := w.Wrap(m, build, nil); err == nil {
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
	if h, ok := strat.(hyperCounter); ok {
		f.Hyper = h.HyperParams(m, clients)
	}
	if e, ok := strat.(EveryRound); ok {
		f.EveryClient = e.EveryClient()
	}
	return f, nil
}

// CloseStrategy frees what a strategy holds (its server state) when no run took it over.
func CloseStrategy(strat Strategy) error {
	if c, ok := strat.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Generates reports whether the run's server generates parameters for its clients
// (Generative: FedTP, TransFed, pFedHN).
func (r *Run) Generates() bool { return r.hooks.gen != nil }

// hyperNetHolder is a strategy with a hypernetwork on its server.
type hyperNetHolder interface{ Net() *hyper.Net }

// HyperNet is the run's hypernetwork (FedTP, TransFed, pFedHN), nil without one.
func (r *Run) HyperNet() *hyper.Net {
	if h, ok := r.strat.(hyperNetHolder); ok {
		return h.Net()
	}
	return nil
}
