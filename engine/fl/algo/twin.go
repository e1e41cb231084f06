package algo

import (
	"fmt"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// twins is the model shape of the algorithms that keep a personal model beside the shared
// one (Ditto's v, APFL's v, pFedMe's θ): every model the run builds becomes
// model.Join(shared, personal, extra...), the personal copy ("personal.<name>") starting
// from the shared model's values, as the reference code's deepcopy of the global model.
// The shared part trains and is averaged as usual; the personal part (and any extra part)
// stays with its client. A twins value serves one run at a time.
type twins struct {
	personal map[*model.Param]bool         // the personal parts' parameters, in every model built
	twinOf   map[*cuda.Tensor]*cuda.Tensor // a personal copy's tensor -> its shared twin's, in the same model
}

// wrap joins m's personal copy beside it (PrepareHooks.Wrap).
func (t *twins) wrap(m model.Model, w fl.Wrapping) (model.Model, error) { return t.join(m, w, "") }

// join builds m's personal copy with w.Build and joins it (and extra, prefixed) beside m.
func (t *twins) join(m model.Model, w fl.Wrapping, extraPrefix string, extra ...model.Model) (*model.Joined, error) {
	if t.personal == nil {
		t.personal, t.twinOf = map[*model.Param]bool{}, map[*cuda.Tensor]*cuda.Tensor{}
	}
	if w.Build == nil {
		return nil, fmt.Errorf("no builder for the personal copy")
	}
	gen := w.Gen
	v, err := w.Build(m.Params().K, gen)
	if err != nil {
		return nil, err
	}
	shared, own := m.Params().List, v.Params().List
	if len(shared) != len(own) {
		v.Close()
		return nil, fmt.Errorf("the personal copy of %s has %d parameters, the model %d", m.Name(), len(own), len(shared))
	}
	if gen != nil { // allocated: start from the shared values
		s := cuda.NewScope()
		s.SetGradEnabled(false)
		for i, p := range shared {
			s.CopyFrom(own[i].T, p.T)
		}
		err := s.Err()
		s.Close()
		if err != nil {
			v.Close()
			return nil, err
		}
	}
	for i, p := range own {
		t.personal[p] = true
		if p.T != nil {
			t.twinOf[p.T] = shared[i].T
		}
	}
	prefixes := []string{"", "personal."}
	parts := []model.Model{m, v}
	for _, e := range extra {
		for _, p := range e.Params().List {
			t.personal[p] = true
		}
		prefixes, parts = append(prefixes, extraPrefix), append(parts, e)
	}
	j, err := model.Join(prefixes, parts...)
	if err != nil {
		v.Close()
		return nil, err
	}
	return j, nil
}

// Personal is true for the parameters of the personal part (and any extra part).
func (t *twins) Personal(p *model.Param) bool { return t.personal[p] }

// predict is the personal part's forward (EvalHooks.Predict).
func (t *twins) predict(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor {
	v := part(s, m, 1)
	if v == nil {
		return nil
	}
	return v.Forward(s, x, &model.Pass{})
}

// part is m's i-th joined part (0: shared, 1: personal, 2...: extra), or nil with the
// error recorded in s.
func part(s *cuda.Scope, m model.Model, i int) model.Model {
	p, err := model.PartOf(m, i)
	if err != nil {
		s.Fail(fmt.Errorf("fl: %w", err))
		return nil
	}
	return p
}
