package algo

import (
	"fmt"
	"sync"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/gp"
	"pfl/engine/model"
)

// pFedGP's host side (pfedgp.go): the batch's features copied to the host, the clients' GPs
// fitted there in parallel, and the fitted classifiers kept per evaluation model.

// fittedGPs are the GP classifiers an evaluation chunk's Condition fitted, per evaluation
// model, for its Predict: evaluation workers (workers.go) condition and predict their
// chunks at once, each on its own model.
type fittedGPs struct {
	mu   sync.Mutex
	rows map[model.Model][]*gp.Classifier
}

// set records m's rows' classifiers.
func (f *fittedGPs) set(m model.Model, rows []*gp.Classifier) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rows == nil {
		f.rows = map[model.Model][]*gp.Classifier{}
	}
	f.rows[m] = rows
}

// get is m's rows' classifiers (nil before Condition).
func (f *fittedGPs) get(m model.Model) []*gp.Classifier {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[m]
}

// drop forgets every model's classifiers.
func (f *fittedGPs) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = nil
}

// gpBatch is a training batch as the host's GPs read it: each row's real samples'
// features, labels and positions in the batch (hostRows), and each client's seed
// (clientSeeds).
type gpBatch struct {
	seeds       []uint64
	feat        [][][]float64
	labels, pos [][]int
}

// hostBatch draws the step's clients' seeds and copies the batch's embeddings z [K, B, E]
// to the host; nil, with s failed, on an error.
func hostBatch(s *cuda.Scope, z *cuda.Tensor, b fl.Batch, pass *model.Pass, name string) *gpBatch {
	seeds := clientSeeds(s, pass, z, name)
	if seeds == nil {
		return nil
	}
	feat, labels, pos, err := hostRows(z, b.Y, b.Mask)
	if err != nil {
		s.Fail(err)
		return nil
	}
	return &gpBatch{seeds: seeds, feat: feat, labels: labels, pos: pos}
}

// hostRows copies z [K, B, D], labels y and mask [K, B] to the host: each row's real
// samples' features and labels, and their positions in the batch.
func hostRows(z, y, mask *cuda.Tensor) (feat [][][]float64, labels [][]int, pos [][]int, err error) {
	k, b, d := int(z.Size(0)), int(z.Size(1)), int(z.Size(2))
	s := cuda.NewScope()
	defer s.Close()
	zs, err := s.To(s.Detach(z), cuda.Float64).Float64s()
	if err != nil {
		return nil, nil, nil, err
	}
	ys, err := s.To(y, cuda.Int64).Int64s()
	if err != nil {
		return nil, nil, nil, err
	}
	ms, err := s.To(mask, cuda.Float64).Float64s()
	if err != nil {
		return nil, nil, nil, err
	}
	feat, labels, pos = make([][][]float64, k), make([][]int, k), make([][]int, k)
	for r := 0; r < k; r++ {
		for i := 0; i < b; i++ {
			if ms[r*b+i] > 0 {
				feat[r] = append(feat[r], zs[(r*b+i)*d:(r*b+i+1)*d])
				labels[r] = append(labels[r], int(ys[r*b+i]))
				pos[r] = append(pos[r], i)
			}
		}
	}
	return feat, labels, pos, s.Err()
}

// fitClients fits one GP classifier per client of the rows ids (fit(r) fits row r's), in
// parallel (gp.ForEach); rows of the same client (a chunk's padding) share the first one's.
func fitClients(ids []int, feat [][][]float64, fit func(r int) (*gp.Classifier, error)) ([]*gp.Classifier, error) {
	first := map[int]int{}
	var rows []int
	for r, c := range ids {
		if _, ok := first[c]; !ok {
			first[c] = r
			rows = append(rows, r)
		}
	}
	out := make([]*gp.Classifier, len(ids))
	err := gp.ForEach(len(rows), func(i int) error {
		r := rows[i]
		if len(feat[r]) == 0 {
			return fmt.Errorf("client %d has no training sample", ids[r])
		}
		clf, err := fit(r)
		if err != nil {
			return fmt.Errorf("client %d: %w", ids[r], err)
		}
		out[r] = clf
		return nil
	})
	if err != nil {
		return nil, err
	}
	for r, c := range ids {
		out[r] = out[first[c]]
	}
	return out, nil
}

// clientSeeds draws each of the step's K clients (z [K, ...]) a host seed from its own
// random stream (Pass.Gens), so that the host-side sampling of every client derives from
// (seed, purpose, round, client) as the rest of the step; nil (and s failed) without
// one stream per client.
func clientSeeds(s *cuda.Scope, pass *model.Pass, z *cuda.Tensor, name string) []uint64 {
	k := int(z.Size(0))
	if pass == nil || len(pass.Gens) != k {
		s.Fail(fmt.Errorf("fl: %s: the step needs one random stream per client (Pass.Gens) for its %d clients", name, k))
		return nil
	}
	seeds := make([]uint64, k)
	for r := 0; r < k; r++ {
		v, err := s.RandInt(pass.Gens[r], 0, 1<<62, z.Device(), 1).Int64s()
		if err != nil {
			s.Fail(err)
			return nil
		}
		seeds[r] = uint64(v[0])
	}
	return seeds
}
