package model

import (
	"fmt"

	"pfl/cuda"
)

// Free is a model of per-client parameters that no forward pass reads: values an algorithm
// trains and reads itself (APFL's mixing weight α), joined beside a network with Join.
type Free struct {
	params *Set
}

// NewFree declares one trainable parameter, name, of one client's shape shape and role
// role, for k clients on dev in dt, with every element value. With a nil gen nothing is
// allocated: the model is declared only, for accounting (as Build with a nil generator);
// gen is otherwise not drawn from.
func NewFree(name string, role Role, value float64, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator, shape ...int64) (*Free, error) {
	if k < 1 {
		return nil, fmt.Errorf("model: free parameter %s for %d clients", name, k)
	}
	f := &Free{params: newSet(k, dev, dt)}
	p := f.params.add(name, role, -1, InitZeros, 0, 0, shape...)
	if err := f.params.materialize(gen); err != nil {
		f.params.Close()
		return nil, err
	}
	if gen == nil || value == 0 {
		return f, nil
	}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	s.CopyFrom(p.T, s.Full(value, dt, dev, p.T.Shape()...))
	if err := s.Err(); err != nil {
		f.params.Close()
		return nil, fmt.Errorf("model: init %s: %w", name, err)
	}
	return f, nil
}

// Name is "free".
func (f *Free) Name() string { return "free" }

// Params is the one parameter.
func (f *Free) Params() *Set { return f.params }

// MACs is 0: nothing is computed.
func (f *Free) MACs() float64 { return 0 }

// Forward is an error: an algorithm reads the parameter itself.
func (f *Free) Forward(s *cuda.Scope, _ *cuda.Tensor, _ *Pass) *cuda.Tensor {
	s.Fail(fmt.Errorf("model: %s is read by its algorithm, not run", f.params.List[0].Name))
	return nil
}

// Close frees the parameter.
func (f *Free) Close() error { return f.params.Close() }

var _ Model = (*Free)(nil)
