package fl

import (
	"fmt"
	"sort"
	"strings"

	"pfl/engine/hyper"
	"pfl/engine/model"
)

// Options are the algorithm settings a config can give; each algorithm reads those it
// documents and ignores the rest.
type Options struct {
	Mu           float64         // FedProx's proximal weight
	PlainSoftmax bool            // FedRoD: plain cross-entropy on the generic head instead of the balanced softmax
	Generate     []model.Role    // FedTP, TransFed: the generated roles; nil: the algorithm's
	Hyper        hyper.Config    // FedTP, TransFed, pFedHN: the hypernetwork and its optimizer (zero sizes: the algorithm's)
	KNN          KNN             // FedTP+KNN: the neighbours' vote
	FedRep       FedRepConfig    // FedRep's body epochs per round
	Ditto        DittoConfig     // Ditto's λ
	APFL         APFLConfig      // APFL's initial mixing weight α
	PerFedAvg    PerFedAvgConfig // Per-FedAvg's step sizes and variant
	PFedMe       PFedMeConfig    // pFedMe's λ, inner steps, personal learning rate and β
	PFedHN       PFedHNConfig    // pFedHN's local steps per round and gradient-norm clip
	PFedGP       PFedGPConfig    // pFedGP's embedding, kernel, Gibbs sampling and objective
	// Rank, when set, replaces Hyper.Rank (algorithm.hyper.rank); nil leaves Hyper.Rank,
	// whose zero means the algorithm's default: fedtp full heads, transfed and pfedhn
	// hyper.RankAuto.
	Rank *int64
	// LocalRoles and LocalBlocks replace the parts a partial-personalization algorithm
	// (partial, fedperfix, prefix-z, prefix-r, prompts, adapters) keeps local; nil keeps its own.
	LocalRoles  []model.Role
	LocalBlocks []int
	// LocalSampled makes Local train only each round's sampled clients (FedPerfix's
	// official Local) instead of every client (FedTP's official local training).
	LocalSampled bool
}

// Algorithm is one entry of the registry: what a config names, what it is, where it comes
// from, and how to make it.
type Algorithm struct {
	Name    string // as configs spell it
	Summary string // one line
	Paper   string // the paper (and section) it implements
	New     func(o Options) Strategy
}

// registry lists every algorithm, one line each; config validation, `pfl algorithms`,
// `pfl train -h` and docs/algorithms.md's table all read it.
var registry = []Algorithm{
	{"fedavg", "average every parameter", "McMahan et al., AISTATS 2017, Alg. 1", func(Options) Strategy { return FedAvg() }},
	{"fedprox", "FedAvg plus a proximal term μ/2‖w − w_global‖² in the local loss", "Li et al., MLSys 2020, Eq. 2", func(o Options) Strategy { return FedProx{Mu: o.Mu} }},
	{"local", "every client trains alone; nothing is shared", "baseline (FedTP Table II \"Local-T\")", func(o Options) Strategy {
		if o.LocalSampled {
			return LocalSampled()
		}
		return Local()
	}},
	{"fedper", "the head stays with its client; the rest is averaged", "Arivazhagan et al., 2019, §3", func(Options) Strategy { return FedPer() }},
	{"fedbn", "normalization layers and their statistics stay local", "Li et al., ICLR 2021, Alg. 1", func(Options) Strategy { return FedBN() }},
	{"fedrep", "local head epochs, then body epochs; the body is averaged", "Collins et al., ICML 2021, Alg. 1", func(o Options) Strategy { return FedRep{o.FedRep} }},
	{"fedbabu", "the head stays at its initialization; fine-tuned before evaluation", "Oh et al., ICLR 2022, §3", func(Options) Strategy { return FedBABU{FineTuneSteps: 1} }},
	{"vanilla-t", "attention Q/K/V stay local, everything else is averaged", "FedTP §III-B, Table II \"Vanilla Personalized-T\"", func(Options) Strategy { return VanillaPersonalizedT() }},
	{"vanilla-attn", "all attention layers and the head stay local", "FedPerfix (Sun et al., ICCV 2023) §3, Table 2 \"Vanilla Attention\"", func(Options) Strategy { return VanillaAttention() }},
	{"partial", "the roles and blocks of algorithm.local_roles / local_blocks stay local, the rest is averaged", "FedPerfix (Sun et al., ICCV 2023) §3.3, Table 1 (layer sensitivity)", func(o Options) Strategy {
		return partialOf("partial", o, nil, nil)
	}},
	{"fedperfix", "prefix adapters (K/V offsets) in every block and the head stay local", "FedPerfix (Sun et al., ICCV 2023) §3.5, Eq. 4–5", FedPerfix},
	{"prefix-z", "zero-initialized vanilla prefixes (K/V offsets) in every block and the head stay local", "FedPerfix §5.3, Table 6 \"Prefix-Z\"", PrefixZ},
	{"prefix-r", "randomly initialized vanilla prefixes (K/V offsets) in every block and the head stay local", "FedPerfix §5.3, Table 6 \"Prefix-R\"", PrefixR},
	{"prompts", "deep prompt tokens in every block and the head stay local", "FedPerfix §5.3, Table 6 \"Prompts\"", PromptsVariant},
	{"adapters", "an adapter after every block's MLP and the head stay local", "FedPerfix §5.3, Table 6 \"Adapters\"", AdaptersVariant},
	{"fedrod", "a generic head (balanced softmax) and a personal head", "Chen & Chao, ICLR 2022, §4", func(o Options) Strategy { return &FedRoD{PlainSoftmax: o.PlainSoftmax} }},
	{"fedtp", "a server hypernetwork generates each client's attention Q/K/V", "FedTP (Li et al., IEEE TNNLS 2023) §III-C, Alg. 1", func(o Options) Strategy { return fedTP(o) }},
	{"fedtp-per", "FedTP with the head kept by each client", "FedTP §IV-B.6, Table VI \"FedTP+FedPer\"", func(o Options) Strategy {
		f := fedTP(o)
		f.Local = []model.Role{model.RoleHead}
		return f
	}},
	{"fedtp-rod", "FedTP with FedRoD's personal head and balanced softmax", "FedTP §IV-B.6, Table VI \"FedTP+FedRoD\"", func(o Options) Strategy {
		f := fedTP(o)
		f.RoD = true
		return f
	}},
	{"fedtp-knn", "FedTP whose evaluation mixes in a nearest-neighbour vote", "FedTP §IV-B.6, Table VI \"FedTP+KNN\"", func(o Options) Strategy {
		f := fedTP(o)
		f.KNN = o.KNN
		return f
	}},
	{"ditto", "a personal model trained on f(v) + λ/2‖v − w_global‖² beside the FedAvg model", "Li et al., ICML 2021, Alg. 1", func(o Options) Strategy { return &Ditto{DittoConfig: o.Ditto} }},
	{"apfl", "a local model mixed with the global one, α v + (1 − α) w, α learned per client", "Deng et al., arXiv:2003.13461, 2020, Alg. 1", func(o Options) Strategy { return &APFL{APFLConfig: o.APFL} }},
	{"perfedavg", "FedAvg of the loss after one local adaptation step (MAML); evaluated after one step", "Fallah et al., NeurIPS 2020, Alg. 1 (FO and HF)", func(o Options) Strategy { return &PerFedAvg{PerFedAvgConfig: o.PerFedAvg} }},
	{"pfedme", "personal models solve f(θ) + λ/2‖θ − w‖² on every batch; w moves towards them", "Dinh et al., NeurIPS 2020, Alg. 1", func(o Options) Strategy { return &PFedMe{PFedMeConfig: o.PFedMe} }},
	{"pfedgp", "a shared network embeds images; each client classifies with its own tree of Pólya-Gamma GPs fitted to its data", "Achituve et al., NeurIPS 2021, pFedGP-Full (no inducing points)", func(o Options) Strategy { return &PFedGP{PFedGPConfig: o.PFedGP} }},
	{"pfedgp-ip", "pFedGP whose GPs are conditioned on shared, learned inducing inputs per class (with the client's data at evaluation)", "Achituve et al., NeurIPS 2021, pFedGP-IP-data", func(o Options) Strategy { return &PFedGPIP{PFedGP: PFedGP{PFedGPConfig: o.PFedGP}} }},
	{"transfed", "a server hypernetwork generates each client's focal modulation (f, context convolutions, h, proj) of a FocalNet", "TransFed (Ashraf et al., WACV 2024) §3.3, Alg. 1, Eq. 6–11", func(o Options) Strategy { return transFed(o) }},
	{"pfedhn", "a server hypernetwork generates every weight of each client's model; K local steps, then one VJP of θ⁰ − θᴷ", "Shamsian et al., ICML 2021, §3, Alg. 1", func(o Options) Strategy { return pFedHN(o) }},
	{"vanilla-c-t", "focal modulation (f, context convolutions, h, proj) stays local, everything else is averaged", "TransFed §3.2, Table 2 \"Vanilla-T\"", func(Options) Strategy { return VanillaCustomizedT() }},
}

func fedTP(o Options) *FedTP {
	f := &FedTP{Roles: o.Generate, Hyper: o.Hyper}
	if o.Rank != nil {
		f.Hyper.Rank = *o.Rank
	}
	return f
}

// Algorithms lists the registry, sorted by name.
func Algorithms() []Algorithm {
	out := append([]Algorithm(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupAlgorithm finds an algorithm by name; the error lists the valid names.
func LookupAlgorithm(name string) (Algorithm, error) {
	for _, a := range registry {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("unknown algorithm %q; choose one of %s", name, AlgorithmNames())
}

// AlgorithmNames is the registry's names, sorted, comma-separated.
func AlgorithmNames() string {
	var names []string
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}
