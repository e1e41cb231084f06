package fl

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/safetensors"
)

// State is what a checkpoint holds besides the history: every tensor of the run's state by
// name — "global/<param>" (one row), "store/<param>" (all N clients' personal rows) and
// "strategy/<name>" (a Stateful strategy's server state, e.g. FedTP's hypernetwork and its
// momentum). Random generators need no saving: every stream derives from (seed, purpose,
// round, client), and the clients' optimizer buffers live for one round only.
//
// The tensors' data is produced on demand (safetensors.Tensor.Source), each read from its
// device tensor when a writer asks for it, so a checkpoint never holds the whole state on
// the host at once; the run must not change until the tensors are written.
func (r *Run) State() ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	add := func(name string, t *cuda.Tensor) error {
		st := safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: t.Shape()}
		if t.DType() == cuda.Float64 {
			st.DType = safetensors.F64
			st.Source = func() ([]byte, error) {
				v, err := t.Float64s()
				if err != nil {
					return nil, err
				}
				enc, err := safetensors.FromFloat64(name, st.Shape, v)
				return enc.Data, err
			}
		} else {
			st.Source = func() ([]byte, error) {
				v, err := t.Float32s()
				if err != nil {
					return nil, err
				}
				enc, err := safetensors.FromFloat32(name, st.Shape, v)
				return enc.Data, err
			}
		}
		out = append(out, st)
		return nil
	}
	for i, p := range r.global.Params().List {
		if err := add("global/"+p.Name, p.T); err != nil {
			return nil, err
		}
		if r.store[i] != nil {
			if err := add("store/"+p.Name, r.store[i]); err != nil {
				return nil, err
			}
		}
	}
	if st := r.hooks.state; st != nil {
		names, ts := st.State()
		for i, n := range names {
			if err := add("strategy/"+n, ts[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
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
	if st := r.hooks.state; st != nil {
		names, ts := st.State()
		for i, n := range names {
			if err := load("strategy/"+n, ts[i]); err != nil {
				return err
			}
		}
	}
	r.History = append([]RoundMetrics(nil), history...)
	return s.Err()
}
