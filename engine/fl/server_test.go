package fl_test

// The server update reads the clients and the weights the strategy's hooks say
// (PrepareHooks.EveryClient and ServerSample, ServerHooks.Weights).

import (
	"fmt"
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
)

// TestPFedMeSchedules: who trains and whom the server reads. With the default (FedTP's code)
// only the round's sampled clients train and only their θ change; with AllClients (the
// pFedMe paper's Alg. 1 and its authors' code) every client trains every round, every θ
// changes, and the server's mean reads only the clients the same seed samples, weighted by
// their sample counts, so its global model equals the default schedule's.
func TestPFedMeSchedules(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 2, Epochs: 1, Batch: 8, LR: 0.05, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
	globals := map[bool][][]float64{}
	for _, all := range []bool{false, true} {
		p := &algo.PFedMe{PFedMeConfig: algo.PFedMeConfig{Lambda: 15, InnerSteps: 2, PersonalLR: 0.01, Beta: 1, AllClients: all}}
		r, err := fl.New(cfg, p, st.Fed, st.Train, st.Test, fltest.Build64(false))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		before := map[int][]float64{} // parameter index -> the store's rows (θ)
		for i, rows := range r.Store() {
			if rows != nil {
				before[i] = fltest.Values(t, rows)
			}
		}
		met, err := r.Round(0) // not the last round: no evaluation
		if err != nil {
			t.Fatal(err)
		}
		sampled := r.SampleN(0, 2)
		want := sampled
		if all {
			want = []int{0, 1, 2, 3, 4, 5}
		}
		if !slices.Equal(met.Clients, want) {
			t.Fatalf("all clients %v: clients %v trained, want %v", all, met.Clients, want)
		}
		if got := r.ServerClients(0, met.Clients); !slices.Equal(got, sampled) {
			t.Fatalf("all clients %v: the server reads %v, want the sample %v", all, got, sampled)
		}
		// every trained client's θ rows moved, the others' did not
		for i, old := range before {
			rows := fltest.Values(t, r.Store()[i])
			n := len(rows) / 6
			for c := range 6 {
				moved := !slices.Equal(rows[c*n:(c+1)*n], old[c*n:(c+1)*n])
				if moved != slices.Contains(want, c) {
					t.Errorf("all clients %v: %s of client %d moved %v", all, r.Global().Params().List[i].Name, c, moved)
				}
			}
		}
		// the server's mean reads the sampled clients' w only: Σ_{k ∈ S} (m_k/M_S) w_k
		var sizes []int
		for _, c := range sampled {
			sizes = append(sizes, len(st.Fed.Part.Train[c]))
		}
		w := fl.Weights(sizes)
		for i, q := range r.Global().Params().List {
			if r.PersonalFlags()[i] {
				continue
			}
			g := fltest.Values(t, q.T)
			globals[all] = append(globals[all], g)
			rows := fltest.Values(t, r.Stacked().Params().List[i].T)
			n := len(g)
			mean := make([]float64, n)
			for j, c := range sampled {
				k := slices.Index(met.Clients, c) // c's row in the stacked model
				for e := range mean {
					mean[e] += w[j] * rows[k*n+e]
				}
			}
			fltest.SameWithin(t, fmt.Sprintf("all clients %v: %s", all, q.Name), g, mean, func(int) float64 { return 1e-12 })
		}
	}
	for i := range globals[false] {
		fltest.SameWithin(t, "the global model, all clients against sampled", globals[true][i], globals[false][i], func(int) float64 { return 1e-10 })
	}
}

// TestServerWeightsHook: the server's mean weighs the round's clients as
// ServerHooks.Weights says (pFedGP: uniformly, as its official trainers; else m_k/M).
func TestServerWeightsHook(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 12, LR: 0.05, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
	for _, uniform := range []bool{true, false} {
		c := algo.DefaultPFedGP()
		c.EmbedDim, c.Draws, c.Steps, c.EvalDraws, c.EvalSteps = 6, 3, 2, 4, 2
		p := &algo.PFedGP{PFedGPConfig: c}
		p.Uniform = uniform
		r, err := fl.New(cfg, p, st.Fed, st.Train, st.Test, fltest.ConvnetAs(16, 1, 6, false, cuda.Float64))
		if err != nil {
			t.Fatal(err)
		}
		met, err := r.Round(0) // not the last round: no evaluation
		if err != nil {
			t.Fatal(err)
		}
		sizes := make([]int, len(met.Clients))
		for i, c := range met.Clients {
			sizes[i] = len(st.Fed.Part.Train[c])
		}
		want := fl.Weights(sizes)
		if uniform {
			want = []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}
		}
		if slices.Equal(fl.Weights(sizes), want) != !uniform {
			t.Fatalf("sizes %v: the clients' sample counts cannot tell the two weightings apart", sizes)
		}
		for i, q := range r.Global().Params().List {
			rows := fltest.Values(t, r.Stacked().Params().List[i].T)
			n := len(rows) / len(sizes)
			mean := make([]float64, n)
			for k, w := range want {
				for j := range mean {
					mean[j] += w * rows[k*n+j]
				}
			}
			fltest.SameWithin(t, fmt.Sprintf("uniform %v: %s", uniform, q.Name), fltest.Values(t, q.T), mean, func(int) float64 { return 1e-12 })
		}
		r.Close()
	}
}
