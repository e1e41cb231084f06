package data

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/rng"
)

// Samples is a sample set held on the device that assembles a plan's client-stacked
// batches there: images (DeviceImages) or character sequences (DeviceText).
type Samples interface {
	// Batch assembles step's batch in s.
	Batch(s *cuda.Scope, p *DevicePlan, step int) Batch
	Close() error
}

// MethodRoles is the natural partition of a text dataset: one client per speaking role
// (LEAF Shakespeare).
const MethodRoles Method = "roles"

// DeviceText is a pool of character sequences held on the device once.
type DeviceText struct {
	Tokens *cuda.Tensor // [N, Len+1] int64
	N, Len int
}

// UploadText copies the sequences to dev.
func UploadText(seqs Sequences, dev cuda.Device) (*DeviceText, error) {
	n := seqs.N()
	if n == 0 || len(seqs.Tokens) != n*(seqs.Len+1) {
		return nil, fmt.Errorf("data: text: %d tokens do not make sequences of %d+1", len(seqs.Tokens), seqs.Len)
	}
	s := cuda.NewScope()
	defer s.Close()
	t := cuda.FromSlice(s, dev, seqs.Tokens, int64(n), int64(seqs.Len+1))
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.Keep(t)
	return &DeviceText{Tokens: t, N: n, Len: seqs.Len}, nil
}

// Close frees the device copy.
func (d *DeviceText) Close() error { return d.Tokens.Close() }

// Batch gathers step's sequences: X the first Len characters [K, B, Len] and Y the next
// character at every position [K, B, Len], both int64.
func (d *DeviceText) Batch(s *cuda.Scope, p *DevicePlan, step int) Batch {
	if step < 0 || step >= p.Steps {
		s.Fail(fmt.Errorf("data: batch: step index %d outside the plan's steps 0 to %d", step, p.Steps-1))
		return Batch{}
	}
	k, b, l := int64(p.K), int64(p.B), int64(d.Len)
	seq := s.IndexSelect(d.Tokens, 0, s.Reshape(p.Row(s, p.index, step), -1)) // [KB, Len+1]
	x := s.Reshape(s.Narrow(seq, 1, 0, l), k, b, l)
	y := s.Reshape(s.Narrow(seq, 1, 1, l), k, b, l)
	return Batch{X: x, Y: y, Mask: p.Row(s, p.mask, step)}
}

// TextFederation is a text dataset spread over its roles: Fed.Part indexes the pooled
// Train and Test sequences (Fed.Train and Fed.Test, the image sets, are nil).
type TextFederation struct {
	Fed         *Federated
	Train, Test Sequences
	IDs         []string // each client's role
}

// Federate makes one client per role of t (FedTP's Shakespeare: every role is a client,
// with its own 80/20 train/test split). clients > 0 keeps a random subset of that many roles
// (drawn from seed; in role order); roles without a training or test sequence are left
// out first. holdOut is the fraction of clients held out of training (novel clients).
func (t *Text) Federate(clients int, holdOut float64, seed uint64) (*TextFederation, error) {
	var roles []TextClient
	for _, c := range t.Clients {
		if c.Train.N() > 0 && c.Test.N() > 0 {
			roles = append(roles, c)
		}
	}
	r := rng.New(rng.Key{Seed: seed, Purpose: "partition", Round: -1, Client: -1})
	switch {
	case len(roles) == 0:
		return nil, fmt.Errorf("data: %s: no role has both training and test sequences", t.Name)
	case clients > len(roles):
		return nil, fmt.Errorf("data: %s: %d clients asked for, but only %d roles have training and test sequences", t.Name, clients, len(roles))
	case clients > 0 && clients < len(roles):
		keep := r.Perm(len(roles))[:clients]
		slices.Sort(keep)
		sub := make([]TextClient, clients)
		for i, j := range keep {
			sub[i] = roles[j]
		}
		roles = sub
	}
	n := len(roles)
	f := &TextFederation{Train: Sequences{Len: roles[0].Train.Len}, Test: Sequences{Len: roles[0].Train.Len},
		Fed: &Federated{Config: PartitionConfig{Method: MethodRoles, Clients: n, Seed: seed, HoldOut: holdOut}}}
	for _, c := range roles {
		if c.Train.Len != f.Train.Len || c.Test.Len != f.Train.Len {
			return nil, fmt.Errorf("data: %s: role %q has sequences of %d and %d characters, others %d", t.Name, c.ID, c.Train.Len, c.Test.Len, f.Train.Len)
		}
		f.IDs = append(f.IDs, c.ID)
		f.Fed.Part.Train = append(f.Fed.Part.Train, span(f.Train.N(), c.Train.N()))
		f.Fed.Part.Test = append(f.Fed.Part.Test, span(f.Test.N(), c.Test.N()))
		f.Train.Tokens = append(f.Train.Tokens, c.Train.Tokens...)
		f.Test.Tokens = append(f.Test.Tokens, c.Test.Tokens...)
	}
	var err error
	if f.Fed.Part.Novel, err = HoldOut(n, holdOut, r); err != nil {
		return nil, err
	}
	return f, nil
}

// span is [from, from+n).
func span(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
