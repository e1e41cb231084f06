package fl

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"pfl/engine/hyper"
	"pfl/engine/model"
	"pfl/internal/suggest"
)

// Options are the algorithm settings a config can give; each algorithm reads those it
// documents and ignores the rest.
type Options struct {
	Mu           float64      // FedProx's proximal weight
	PlainSoftmax bool         // FedRoD: plain cross-entropy on the generic head instead of the balanced softmax
	Generate     []model.Role // FedTP, TransFed: the generated roles; nil: the algorithm's
	Hyper        hyper.Config // FedTP, TransFed, pFedHN: the hypernetwork and its optimizer (zero sizes: the algorithm's)
	// Own is the algorithm's own section (Algorithm.Own: FedRep's, pFedMe's, …), validated
	// and resolved, of the type of its registry default; nil for an algorithm without one.
	Own Section
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
	// Keys are the shared algorithm.* keys it reads beside name and its own section: a key
	// ("mu", "local_roles") or a section ("hyper": every key under it). `pfl algorithms`
	// lists them, and a config that sets a key (or an own section's) that none of its
	// runs' algorithms reads is refused (experiment.CheckKeysRead).
	Keys []string
	// Own is its own section (algorithm.<Own.Key>), its type and defaults; zero: none.
	// Settings decode, default, validate, write and document it from this line alone.
	Own OwnSection
	// PlugIn is the model plug-in it adds with its own defaults when the model has none
	// (its Shaper); a plug-in given for any other algorithm must be complete on its own.
	PlugIn ModelPlugIn
	// Keeps says which parameters stay with their clients where a report compares against
	// that: nothing (FedAvg, the all-global reference), everything (Local), exactly the
	// listed parts (partial); zero: the algorithm's own choice.
	Keeps Keep
	// Check is the algorithm's own check across keys (fedrep's epochs, partial's parts),
	// naming the key it refuses; own is its own section (nil without one), epochs is
	// train.epochs. Nil: none.
	Check func(s Settings, own Section, epochs int) error
}

// The keys only some algorithms read (Algorithm.Keys).
const (
	KeyLocalRoles   = "local_roles"
	KeyLocalBlocks  = "local_blocks"
	KeyLocalClients = "local_clients"
)

// Reads reports whether the algorithm reads key, listed itself or under a listed section
// or its own.
func (a Algorithm) Reads(key string) bool {
	for _, k := range a.ReadKeys() {
		if k == key || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}

// ReadKeys are the algorithm.* keys and sections it reads beside name: Keys, then its own
// section's key.
func (a Algorithm) ReadKeys() []string {
	if a.Own.Key == "" {
		return a.Keys
	}
	return append(append([]string(nil), a.Keys...), a.Own.Key)
}

// ModelPlugIn is a model plug-in an algorithm adds with its own defaults.
type ModelPlugIn string

// The plug-ins, named by their model key.
const (
	PlugInPrefix  ModelPlugIn = "prefix"  // model.prefix: FedPerfix's prefixes
	PlugInAdapter ModelPlugIn = "adapter" // model.adapter: an adapter after every block's MLP
)

// Keep is which parameters an algorithm keeps with the clients, where reports compare
// against it (Algorithm.Keeps).
type Keep int

// The kinds of Keep.
const (
	KeepOwn        Keep = iota // the algorithm's own choice
	KeepNothing                // every parameter averaged: the all-global reference (FedAvg)
	KeepEverything             // nothing shared: the all-local reference (Local)
	KeepListed                 // exactly algorithm.local_roles and local_blocks (partial)
)

// AddingPlugIn lists the algorithms that add plug-in p with their defaults, in the
// registry's order.
func AddingPlugIn(p ModelPlugIn) []string {
	var out []string
	for _, a := range registry {
		if a.PlugIn == p {
			out = append(out, a.Name)
		}
	}
	return out
}

// Keeps is what the named algorithm keeps local (KeepOwn for an unknown name).
func Keeps(name string) Keep {
	a, _ := LookupAlgorithm(name)
	return a.Keeps
}

// registry lists every algorithm, one line each; config validation, `pfl algorithms`,
// `pfl train -h` and docs/algorithms.md's table all read it.
var registry = []Algorithm{
	{Name: "fedavg", Summary: "average every parameter", Paper: "McMahan et al., AISTATS 2017, Alg. 1", New: func(Options) Strategy { return FedAvg() }, Keeps: KeepNothing},
	{Name: "fedprox", Summary: "FedAvg plus a proximal term μ/2‖w − w_global‖² in the local loss", Paper: "Li et al., MLSys 2020, Eq. 2", New: func(o Options) Strategy { return FedProx{Mu: o.Mu} }, Keys: []string{"mu"}},
	{Name: "local", Summary: "every client trains alone; nothing is shared", Paper: "baseline (FedTP Table II \"Local-T\")", New: func(o Options) Strategy {
		if o.LocalSampled {
			return LocalSampled()
		}
		return Local()
	}, Keys: []string{KeyLocalClients}, Keeps: KeepEverything},
	{Name: "fedper", Summary: "the head stays with its client; the rest is averaged", Paper: "Arivazhagan et al., 2019, §3", New: func(Options) Strategy { return FedPer() }},
	{Name: "fedbn", Summary: "normalization layers and their statistics stay local", Paper: "Li et al., ICLR 2021, Alg. 1", New: func(Options) Strategy { return FedBN() }},
	{Name: "fedrep", Summary: "local head epochs, then body epochs; the body is averaged", Paper: "Collins et al., ICML 2021, Alg. 1", New: func(o Options) Strategy { return FedRep{ownOf[FedRepConfig](o)} }, Own: OwnSection{"fedrep", FedRepConfig{}.Default()}, Check: checkFedRep},
	{Name: "fedbabu", Summary: "the head stays at its initialization; fine-tuned before evaluation", Paper: "Oh et al., ICLR 2022, §3", New: func(o Options) Strategy { return FedBABU{ownOf[FedBABUConfig](o)} }, Own: OwnSection{"fedbabu", FedBABUConfig{}.Default()}},
	{Name: "vanilla-t", Summary: "attention Q/K/V stay local, everything else is averaged", Paper: "FedTP §III-B, Table II \"Vanilla Personalized-T\"", New: func(Options) Strategy { return VanillaPersonalizedT() }},
	{Name: "vanilla-attn", Summary: "all attention layers and the head stay local", Paper: "FedPerfix (Sun et al., ICCV 2023) §3, Table 2 \"Vanilla Attention\"", New: func(Options) Strategy { return VanillaAttention() }},
	{Name: "partial", Summary: "the roles and blocks of algorithm.local_roles / local_blocks stay local, the rest is averaged", Paper: "FedPerfix (Sun et al., ICCV 2023) §3.3, Table 1 (layer sensitivity)", New: func(o Options) Strategy {
		return partialOf("partial", o, nil, nil)
	}, Keys: []string{KeyLocalRoles, KeyLocalBlocks}, Keeps: KeepListed, Check: checkPartial},
	{Name: "fedperfix", Summary: "prefix adapters (K/V offsets) in every block and the head stay local", Paper: "FedPerfix (Sun et al., ICCV 2023) §3.5, Eq. 4–5", New: FedPerfix, Keys: []string{KeyLocalRoles, KeyLocalBlocks}, PlugIn: PlugInPrefix},
	{Name: "prefix-z", Summary: "zero-initialized vanilla prefixes (K/V offsets) in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prefix-Z\"", New: PrefixZ, Keys: []string{KeyLocalRoles, KeyLocalBlocks}, PlugIn: PlugInPrefix},
	{Name: "prefix-r", Summary: "randomly initialized vanilla prefixes (K/V offsets) in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prefix-R\"", New: PrefixR, Keys: []string{KeyLocalRoles, KeyLocalBlocks}, PlugIn: PlugInPrefix},
	{Name: "prompts", Summary: "deep prompt tokens in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prompts\"", New: PromptsVariant, Keys: []string{KeyLocalRoles, KeyLocalBlocks}},
	{Name: "adapters", Summary: "an adapter after every block's MLP and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Adapters\"", New: AdaptersVariant, Keys: []string{KeyLocalRoles, KeyLocalBlocks}, PlugIn: PlugInAdapter},
	{Name: "fedrod", Summary: "a generic head (balanced softmax) and a personal head", Paper: "Chen & Chao, ICLR 2022, §4", New: func(o Options) Strategy { return &FedRoD{PlainSoftmax: o.PlainSoftmax} }, Keys: []string{"generic_loss"}},
	{Name: "fedtp", Summary: "a server hypernetwork generates each client's attention Q/K/V", Paper: "FedTP (Li et al., IEEE TNNLS 2023) §III-C, Alg. 1", New: func(o Options) Strategy { return fedTP(o) }, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-per", Summary: "FedTP with the head kept by each client", Paper: "FedTP §IV-B.6, Table VI \"FedTP+FedPer\"", New: func(o Options) Strategy {
		f := fedTP(o)
		f.Local = []model.Role{model.RoleHead}
		return f
	}, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-rod", Summary: "FedTP with FedRoD's personal head and balanced softmax", Paper: "FedTP §IV-B.6, Table VI \"FedTP+FedRoD\"", New: func(o Options) Strategy {
		f := fedTP(o)
		f.RoD = true
		return f
	}, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-knn", Summary: "FedTP whose evaluation mixes in a nearest-neighbour vote", Paper: "FedTP §IV-B.6, Table VI \"FedTP+KNN\"", New: func(o Options) Strategy {
		f := fedTP(o)
		f.KNN = ownOf[KNN](o)
		return f
	}, Keys: []string{"generate", "hyper"}, Own: OwnSection{"knn", KNN{}.Default()}},
	{Name: "ditto", Summary: "a personal model trained on f(v) + λ/2‖v − w_global‖² beside the FedAvg model", Paper: "Li et al., ICML 2021, Alg. 1", New: func(o Options) Strategy { return &Ditto{DittoConfig: ownOf[DittoConfig](o)} }, Own: OwnSection{"ditto", DittoConfig{}.Default()}},
	{Name: "apfl", Summary: "a local model mixed with the global one, α v + (1 − α) w, α learned per client", Paper: "Deng et al., arXiv:2003.13461, 2020, Alg. 1", New: func(o Options) Strategy { return &APFL{APFLConfig: ownOf[APFLConfig](o)} }, Own: OwnSection{"apfl", APFLConfig{}.Default()}},
	{Name: "perfedavg", Summary: "FedAvg of the loss after one local adaptation step (MAML); evaluated after one step", Paper: "Fallah et al., NeurIPS 2020, Alg. 1 (FO and HF)", New: func(o Options) Strategy { return &PerFedAvg{PerFedAvgConfig: ownOf[PerFedAvgSettings](o).config()} }, Own: OwnSection{"perfedavg", PerFedAvgSettings{}.Default()}},
	{Name: "pfedme", Summary: "personal models solve f(θ) + λ/2‖θ − w‖² on every batch; w moves towards them", Paper: "Dinh et al., NeurIPS 2020, Alg. 1", New: func(o Options) Strategy { return &PFedMe{PFedMeConfig: ownOf[PFedMeSettings](o).config()} }, Own: OwnSection{"pfedme", PFedMeSettings{}.Default()}},
	{Name: "pfedgp", Summary: "a shared network embeds images; each client classifies with its own tree of Pólya-Gamma GPs fitted to its data", Paper: "Achituve et al., NeurIPS 2021, pFedGP-Full (no inducing points)", New: func(o Options) Strategy { return &PFedGP{PFedGPConfig: ownOf[PFedGPSettings](o).config()} }, Own: OwnSection{"pfedgp", PFedGPSettings{}.Default()}},
	{Name: "pfedgp-ip", Summary: "pFedGP whose GPs are conditioned on shared, learned inducing inputs per class (with the client's data at evaluation)", Paper: "Achituve et al., NeurIPS 2021, pFedGP-IP-data", New: func(o Options) Strategy {
		return &PFedGPIP{PFedGP: PFedGP{PFedGPConfig: ownOf[PFedGPSettings](o).config()}}
	}, Own: OwnSection{"pfedgp", PFedGPSettings{}.Default()}, Check: checkPFedGPIP},
	{Name: "transfed", Summary: "a server hypernetwork generates each client's focal modulation (f, context convolutions, h, proj) of a FocalNet", Paper: "TransFed (Ashraf et al., WACV 2024) §3.3, Alg. 1, Eq. 6–11", New: func(o Options) Strategy { return transFed(o) }, Keys: []string{"generate", "hyper"}},
	{Name: "pfedhn", Summary: "a server hypernetwork generates every weight of each client's model; K local steps, then one VJP of θ⁰ − θᴷ", Paper: "Shamsian et al., ICML 2021, §3, Alg. 1", New: func(o Options) Strategy { return pFedHN(o) }, Keys: []string{"hyper"}, Own: OwnSection{"pfedhn", PFedHNConfig{}.Default()}, Check: checkPFedHN},
	{Name: "vanilla-c-t", Summary: "focal modulation (f, context convolutions, h, proj) stays local, everything else is averaged", Paper: "TransFed §3.2, Table 2 \"Vanilla-T\"", New: func(Options) Strategy { return VanillaCustomizedT() }},
}

// Register adds an algorithm to the registry, as its line in registry above would: for an
// algorithm kept outside this package (a program's, or a test's). Its name must be new,
// its own section's key new or of the same type as the algorithms that share it.
func Register(a Algorithm) error {
	if a.Name == "" || a.New == nil {
		return fmt.Errorf("fl: an algorithm needs a name and New")
	}
	if _, err := LookupAlgorithm(a.Name); err == nil {
		return fmt.Errorf("fl: algorithm %s is registered already", a.Name)
	}
	if a.Own.Key != "" {
		if a.Own.Default == nil {
			return fmt.Errorf("fl: algorithm %s: own section %s has no default", a.Name, a.Own.Key)
		}
		if def, ok := OwnDefault(a.Own.Key); ok && reflect.TypeOf(def) != reflect.TypeOf(a.Own.Default) {
			return fmt.Errorf("fl: algorithm %s: section %s is a %T already", a.Name, a.Own.Key, def)
		}
		if strings.ContainsAny(a.Own.Key, ". ") || slices.Contains(sharedKeys(), a.Own.Key) {
			return fmt.Errorf("fl: algorithm %s: own section key %q is not a new word (shared keys: %s)", a.Name, a.Own.Key, strings.Join(sharedKeys(), ", "))
		}
	}
	registry = append(registry, a)
	return nil
}

// sharedKeys are the keys of Settings' own fields (name, mu, hyper, …).
func sharedKeys() []string {
	var keys []string
	t := reflect.TypeOf(Settings{})
	for i := 0; i < t.NumField(); i++ {
		if k := t.Field(i).Tag.Get("mapstructure"); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
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
	var names []string
	for _, a := range registry {
		names = append(names, a.Name)
	}
	return Algorithm{}, fmt.Errorf("unknown algorithm %q%s; choose one of %s", name, suggest.DidYouMean(name, names), AlgorithmNames())
}

// AlgorithmNames is the registry's names, sorted, comma-separated.
func AlgorithmNames() string {
	var names []string
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}
