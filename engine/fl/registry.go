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
	// (its PrepareHooks.Shape); a plug-in given for any other algorithm must be complete on its own.
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

// registry lists every algorithm, in the order they were registered: engine/fl/algo's
// built-in ones first (its registry.go, one line each), then any a program or test adds;
// config validation, `pfl algorithms`, `pfl train -h` and docs/algorithms.md's table all
// read it.
var registry []Algorithm

// Register adds an algorithm to the registry: engine/fl/algo registers the built-in ones
// when it is loaded (one line each in its registry.go), a program or a test its own. Its
// name must be new, its own section's key new or of the same type as the algorithms that
// share it.
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
