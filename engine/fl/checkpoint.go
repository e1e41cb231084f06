package fl

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/safetensors"
)

// State is what a checkpoint holds besides the history: every tensor of the run's state by
// name — "global/<param>" (one row), "store/<param>" (all N clients' personal rows) and
// "strategy/<name>" (ServerHooks.State: the strategy's server state, e.g. FedTP's hypernetwork and its
// momentum) — copied to the host now. Random generators need no saving: every stream
// derives from (seed, purpose, round, client), and the clients' optimizer buffers live for
// one round only.
func (r *Run) State() ([]safetensors.Tensor, error) {
	ts := r.StateOnDemand()
	for i := range ts {
		data, err := ts[i].Bytes()
		if err != nil {
			return nil, err
		}
		ts[i].Data, ts[i].Source = data, nil
	}
	return ts, nil
}

// StateOnDemand is State with each tensor's data read from its device tensor only when
// asked for (safetensors.Tensor.Source), so that a checkpoint never holds the whole state
// on the host at once; the run must stay open and unchanged until the data is read.
func (r *Run) StateOnDemand() []safetensors.Tensor {
	var out []safetensors.Tensor
	add := func(name string, t *cuda.Tensor) {
		st := safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: t.Shape()}
		if t.DType() == cuda.Float64 {
			st.DType = safetensors.F64
		}
		st.Source = func() ([]byte, error) { return hostBytes(name, t) }
		out = append(out, st)
	}
	for i, p := range r.global.Params().List {
		add("global/"+p.Name, p.T)
		if r.store[i] != nil {
			add("store/"+p.Name, r.store[i])
		}
	}
	if state := r.hooks.server.State; state != nil {
		names, ts := state()
		for i, n := range names {
			add("strategy/"+n, ts[i])
		}
	}
	return out
}

// Restore loads a State written by a run of the same configuration and sets the history,
// so that the next Round continues after the last one in history.
func (r *Run) Restore(f *safetensors.File, history []RoundMetrics) error {
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	load := func(name string, dst *cuda.Tensor) error {
		t, ok := f.Get(name)
		if !ok {
			return fmt.Errorf("fl: checkpoint lacks %s", name)
		}
		if !slices.Equal(t.Shape, dst.Shape()) {
			return fmt.Errorf("fl: checkpoint %s has shape %v, the run %v: was the config changed?", name, t.Shape, dst.Shape())
		}
		v, err := t.Float64s()
		if err != nil {
			return err
		}
		s.CopyFrom(dst, cuda.FromSlice(s, dst.Device(), v, t.Shape...))
		s.Reset()
		return nil
	}
	for i, p := range r.global.Params().List {
		if err := load("global/"+p.Name, p.T); err != nil {
			return err
		}
		if r.store[i] != nil {
			if err := load("store/"+p.Name, r.store[i]); err != nil {
				return err
			}
		}
	}
	if state := r.hooks.server.State; state != nil {
		names, ts := state()
		for i, n := range names {
			if err := load("strategy/"+n, ts[i]); err != nil {
				return err
			}
		}
	}
	r.History = append([]RoundMetrics(nil), history...)
	return s.Err()
}

// hostBytes copies t to the host as a checkpoint stores it: float64 as F64, every other
// dtype converted to F32.
func hostBytes(name string, t *cuda.Tensor) ([]byte, error) {
	var enc safetensors.Tensor
	var err error
	if t.DType() == cuda.Float64 {
		var v []float64
		if v, err = t.Float64s(); err == nil {
			enc, err = safetensors.FromFloat64(name, t.Shape(), v)
		}
	} else {
		var v []float32
		if v, err = t.Float32s(); err == nil {
			enc, err = safetensors.FromFloat32(name, t.Shape(), v)
		}
	}
	return enc.Data, err
}
