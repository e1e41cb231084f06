package algo

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// FedRoD is the linear version of FedRoD (Chen & Chao, "On Bridging Generic and
// Personalized Federated Learning for Image Classification", ICLR 2022), as FedTP's code
// runs it: the body and a generic head are averaged and trained with the balanced-softmax
// loss (each client's logits shifted by the log of its training-label counts, §4 of the
// paper); a personal linear head, kept by its client, reads the body's features detached
// and is trained with cross-entropy on generic logits (detached) plus personal logits,
// which are also the client's prediction. A client's loss is the sum of the two.
//
// As in FedTP's code, the personal head has its own plain SGD at the clients' learning rate
// (no momentum, no weight decay) while the rest uses the run's SGD. One
// difference from the reference: a class a client never saw gets log-count log(1e-12)
// instead of −∞, so that padded batch slots stay finite (its softmax weight is 1e-12
// instead of 0).
type FedRoD struct {
	// PlainSoftmax trains the generic head with ordinary cross-entropy instead of the
	// balanced softmax (FedTP's --balanced_soft_max off).
	PlainSoftmax bool

	logCounts *cuda.Tensor          // [N, classes], every client's log training-label counts
	heads     map[*cuda.Tensor]bool // the personal heads' tensors, in every model the run built
}

// Name is "fedrod".
func (*FedRoD) Name() string { return "fedrod" }

// Personal is true for the personal head.
func (*FedRoD) Personal(p *model.Param) bool { return p.Role == model.RolePersonalHead }

// PrepareHooks add the personal head (Wrap) and count every client's training labels
// (Bind).
func (f *FedRoD) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Wrap: f.Wrap, Bind: f.Bind} }

// TrainHooks train with the two heads' loss, the personal head on its own SGD.
func (f *FedRoD) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Loss: f.Loss, Optimizer: f.Optimizer}
}

// Wrap adds the personal head.
func (f *FedRoD) Wrap(m model.Model, w fl.Wrapping) (model.Model, error) {
	h, err := model.HeadedOf(m)
	if err != nil {
		return nil, err
	}
	two, err := model.NewTwoHeads(h, w.Gen)
	if err != nil {
		return nil, err
	}
	if f.heads == nil {
		f.heads = map[*cuda.Tensor]bool{}
	}
	for _, p := range two.Params().ByRole(model.RolePersonalHead) {
		f.heads[p.T] = true
	}
	return two, nil
}

// Optimizer is the run's SGD for the body and generic head and a plain SGD at the same
// learning rate for the personal head, as FedTP's code trains them.
func (f *FedRoD) Optimizer(_ int, c fl.SGDConfig) fl.Optimizer {
	return &splitOptimizer{in: func(t *cuda.Tensor) bool { return f.heads[t] },
		rest: fl.NewSGD(c), part: fl.NewSGD(fl.SGDConfig{LR: c.LR})}
}

// splitOptimizer steps the parameters in selects with part and the others with rest. A
// (model, phase) always hands it the same parameters, so the split is made at the first
// step.
type splitOptimizer struct {
	in           func(*cuda.Tensor) bool
	rest, part   fl.Optimizer
	split        bool
	restI, partI []int
}

func (o *splitOptimizer) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	if !o.split {
		for i, p := range params {
			if o.in(p) {
				o.partI = append(o.partI, i)
			} else {
				o.restI = append(o.restI, i)
			}
		}
		o.split = true
	}
	pick := func(ts []*cuda.Tensor, idx []int) []*cuda.Tensor {
		out := make([]*cuda.Tensor, len(idx))
		for j, i := range idx {
			out[j] = ts[i]
		}
		return out
	}
	if len(o.restI) > 0 {
		o.rest.Step(s, pick(params, o.restI), pick(grads, o.restI), active)
	}
	if len(o.partI) > 0 {
		o.part.Step(s, pick(params, o.partI), pick(grads, o.partI), active)
	}
}

func (o *splitOptimizer) Reset(s *cuda.Scope) {
	o.rest.Reset(s)
	o.part.Reset(s)
}

func (o *splitOptimizer) Close() error {
	o.rest.Close()
	return o.part.Close()
}

// Bind counts every client's training labels. A FedRoD value serves one run at a time.
func (f *FedRoD) Bind(env fl.Env) error {
	f.Close()
	fed, dev, dt := env.Fed, env.Device, env.DType
	if fed.Train == nil {
		return fmt.Errorf("FedRoD's balanced softmax counts each client's image labels; the %q partition has no labelled images", fed.Config.Method)
	}
	c := fed.Train.Classes
	n := len(fed.Part.Train)
	logs := make([]float64, n*c)
	for client, idx := range fed.Part.Train {
		counts := make([]float64, c)
		for _, i := range idx {
			counts[fed.Train.Labels[i]]++
		}
		for j, v := range counts {
			logs[client*c+j] = math.Log(math.Max(v, 1e-12))
		}
	}
	s := cuda.NewScope()
	defer s.Close()
	t := s.To(cuda.FromSlice(s, dev, logs, int64(n), int64(c)), dt)
	if err := s.Err(); err != nil {
		return err
	}
	s.Keep(t)
	f.logCounts = t
	return nil
}

// Close frees the label counts.
func (f *FedRoD) Close() error {
	if f.logCounts != nil {
		f.logCounts.Close()
		f.logCounts = nil
	}
	return nil
}

// Loss is the generic head's (balanced) loss plus the personal head's loss.
func (f *FedRoD) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	h, err := model.TwoHeadsOf(m)
	if err != nil {
		s.Fail(fmt.Errorf("fl: fedrod: %w", err))
		return nil
	}
	feat := h.Features(s, b.X, pass)
	generic := h.GenericHead(s, feat, pass)
	shifted := generic
	if !f.PlainSoftmax {
		shifted = s.Add(generic, s.Unsqueeze(s.IndexSelect(f.logCounts, 0, b.Rows), 1)) // [K, 1, C]
	}
	personal := s.Add(s.Detach(generic), h.PersonalHead(s, s.Detach(feat), pass))
	return s.Add(fl.MeanCrossEntropy(s, shifted, b.Y, b.Mask), fl.MeanCrossEntropy(s, personal, b.Y, b.Mask))
}
