package model

import (
	"fmt"

	"pfl/cuda"
)

// Joined is several models of the same clients side by side as one model: one parameter
// set holding every part's parameters in order, part i's names prefixed with prefixes[i]
// (so checkpoints keep them apart). Forward runs the first part; an algorithm that keeps
// several models per client (Ditto: a global and a personal copy; APFL: a global and a
// local model) reads each through Part. Joined owns its parts.
type Joined struct {
	parts  []Model
	params *Set
}

// Join joins parts (each built for the same K clients, device and dtype), renaming part
// i's parameters prefixes[i]+name.
func Join(prefixes []string, parts ...Model) (*Joined, error) {
	if len(parts) == 0 || len(prefixes) != len(parts) {
		return nil, fmt.Errorf("model: join %d parts with %d prefixes", len(parts), len(prefixes))
	}
	first := parts[0].Params()
	j := &Joined{parts: parts, params: newSet(first.K, first.Device, first.DType)}
	for i, m := range parts {
		ps := m.Params()
		if ps.K != first.K || ps.Device != first.Device || ps.DType != first.DType {
			return nil, fmt.Errorf("model: join: part %d holds %d clients (%s %s), part 0 %d (%s %s)", i, ps.K, ps.Device, ps.DType, first.K, first.Device, first.DType)
		}
		for _, p := range ps.List {
			p.Name = prefixes[i] + p.Name
			if _, dup := j.params.byName[p.Name]; dup {
				return nil, fmt.Errorf("model: join: two parameters named %s", p.Name)
			}
			j.params.List = append(j.params.List, p)
			j.params.byName[p.Name] = p
		}
	}
	return j, nil
}

// Part is the i-th joined model.
func (j *Joined) Part(i int) Model { return j.parts[i] }

// PartOf is part i of m, a model Join made (Ditto's personal copy, APFL's mixing weight);
// the error names a model that is not joined or has no such part.
func PartOf(m Model, i int) (Model, error) {
	j, ok := m.(*Joined)
	switch {
	case !ok:
		return nil, fmt.Errorf("model %s has no personal copy (it is not joined)", m.Name())
	case i < 0 || i >= len(j.parts):
		return nil, fmt.Errorf("model %s joins %d parts, not %d", m.Name(), len(j.parts), i+1)
	}
	return j.parts[i], nil
}

// Name is the first part's name.
func (j *Joined) Name() string { return j.parts[0].Name() }

// Params are every part's parameters, part by part.
func (j *Joined) Params() *Set { return j.params }

// MACs is the first part's (the one Forward runs).
func (j *Joined) MACs() float64 { return j.parts[0].MACs() }

// Forward runs the first part.
func (j *Joined) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return j.parts[0].Forward(s, x, pass)
}

// Close frees every part.
func (j *Joined) Close() error {
	var err error
	for _, m := range j.parts {
		if e := m.Close(); err == nil {
			err = e
		}
	}
	return err
}
