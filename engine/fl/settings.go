package fl

import (
	"fmt"

	"pfl/engine/hyper"
	"pfl/engine/internal/check"
	"pfl/engine/internal/defaults"
	"pfl/engine/model"
)

// Settings are a config's algorithm keys (algorithm.*), as YAML and config.json spell
// them: the algorithm's name, the keys several algorithms share (the hypernetwork, the
// parts kept local), and the sections algorithms own (Section: a type in the algorithm's
// file, its defaults in the algorithm's registry line). The registry entry of an
// algorithm says which of these keys it reads (Algorithm.Keys, Algorithm.Own).
// engine/experiment embeds Settings as its algorithm section.
type Settings struct {
	Name string `mapstructure:"name" json:"name"` // an algorithm from `pfl algorithms`; default fedavg
	// Mu is FedProx's proximal weight μ; default 1, the official FedTP code's --mu (the
	// FedTP paper states none).
	Mu float64 `mapstructure:"mu" json:"mu"`
	// GenericLoss is FedRoD's loss on the generic head: "balanced" (balanced softmax, the
	// paper's) or "ce" (plain cross-entropy); default balanced.
	GenericLoss string `mapstructure:"generic_loss" json:"generic_loss"`
	// Generate lists the roles the hypernetwork of fedtp and transfed generates (FedTP's
	// Table V and TransFed's Table 3 ablations): role names from `pfl models`, "focal" for
	// focal_f, focal_ctx, focal_h and focal_proj, or "encoder" for attn_qkv, attn_out, the
	// focal roles, mlp and norm. Unset: the algorithm's own (fedtp [attn_qkv], transfed
	// [focal]: what vanilla-c-t keeps local); pfedhn generates every trainable parameter and
	// refuses it.
	Generate []string `mapstructure:"generate" json:"generate"`
	// LocalRoles and LocalBlocks are what partial, fedperfix, prompts and adapters keep
	// local: roles from `pfl models` and block indices (every parameter of block i, as the
	// official FedPerfix preset keeps blocks.11 on CIFAR-100). Unset: the algorithm's own
	// (fedperfix: adapter and head; partial has none and needs local_roles or
	// local_blocks).
	LocalRoles  []string `mapstructure:"local_roles" json:"local_roles"`
	LocalBlocks []int    `mapstructure:"local_blocks" json:"local_blocks"`
	// LocalClients is which clients algorithm local trains each round: "all" (FedTP's
	// official local_training: every client, every round, whatever train.participation)
	// or "sampled" (FedPerfix's official Local server: the round's sampled clients, as
	// every other algorithm). Unset: all. Other algorithms do not read it.
	LocalClients string        `mapstructure:"local_clients" json:"local_clients"`
	Hyper        HyperSettings `mapstructure:"hyper" json:"hyper"`
	// own holds the own sections a config set (algorithm.fedrep, algorithm.pfedme, …:
	// Algorithm.Own), by key; a section it does not hold is at the registry's default.
	// Section reads them and SetSection writes them (copying on write: Settings are
	// values); JSON reads and writes them beside the fields above (own.go).
	own map[string]Section
}

// DefaultSettings are the documented defaults: fedavg, and every own section at its
// registry default. algorithm.hyper.lr and pfedme.personal_lr are left unset: they follow
// train.lr (Resolve); algorithm.hyper.embed, .hidden and .rank are left unset: the
// algorithm chooses.
func DefaultSettings() Settings {
	return Settings{Name: "fedavg", Mu: 1, GenericLoss: "balanced", Hyper: HyperSettings{}.Default()}
}

// Resolve fills in the keys that follow the run's learning rate lr (train.lr) unless set:
// algorithm.hyper.lr and those of the own sections that follow it (FollowsLR:
// algorithm.pfedme.personal_lr).
func (s Settings) Resolve(lr float64) Settings {
	if s.Hyper.LR == nil {
		s.Hyper.LR = &lr
	}
	for _, k := range OwnKeys() {
		if f, ok := s.Section(k).(FollowsLR); ok {
			if err := s.SetSection(k, f.WithLR(lr)); err != nil {
				panic(err) // WithLR returned a section of another type: a bug in its file
			}
		}
	}
	return s
}

// Validate checks every algorithm key, naming the first invalid one: each section's own
// Validate, the shared keys' values, and the chosen algorithm's checks across keys (its
// registry entry's Check; epochs is train.epochs). A key the algorithm does not read is
// not its business: a suite's members share one algorithm section (experiment's
// CheckKeysRead refuses a key no run of a config reads).
func (s Settings) Validate(epochs int) error {
	k := &check.Checker{}
	a, err := LookupAlgorithm(s.Name)
	if err != nil {
		k.Fail("algorithm.name", "%v", err)
	}
	k.Real("algorithm.mu", s.Mu, 0, check.Inf, "[]")
	k.OneOf("algorithm.generic_loss", s.GenericLoss, "balanced", "ce")
	if _, err := generatedRoles(s.Generate); err != nil {
		k.Fail("algorithm.generate", "%v", err)
	}
	if s.Generate != nil && len(s.Generate) == 0 {
		k.Fail("algorithm.generate", "empty; list at least one role, or leave it unset for the algorithm's own")
	}
	k.Add(s.Hyper.Validate())
	if _, err := localRoles(s.LocalRoles); err != nil {
		k.Fail("algorithm.local_roles", "%v", err)
	}
	for _, b := range s.LocalBlocks {
		k.AtLeast("algorithm.local_blocks", int64(b), 0)
	}
	// a key the algorithm does not read is refused where the config is given
	// (experiment.CheckKeysRead): a suite's members share one algorithm section, and
	// each ignores the keys of the others
	if s.LocalClients != "" {
		k.OneOf("algorithm.local_clients", s.LocalClients, "all", "sampled")
	}
	for _, key := range OwnKeys() {
		k.Add(s.Section(key).Validate())
	}
	if err == nil && a.Check != nil {
		k.Add(a.Check(s, s.Section(a.Own.Key), epochs))
	}
	return k.Err()
}

// Options maps validated, resolved settings onto the registry's options.
func (s Settings) Options() Options {
	h := s.Hyper
	roles, _ := generatedRoles(s.Generate)
	o := Options{Mu: s.Mu, PlainSoftmax: s.GenericLoss == "ce", Generate: roles,
		Hyper: hyper.Config{Embed: defaults.Value(h.Embed), Hidden: defaults.Value(h.Hidden), Layers: h.Layers,
			LR: defaults.Value(h.LR), Momentum: noneIfZero(h.Momentum), WeightDecay: noneIfZero(h.WeightDecay)},
		Rank: h.Rank, LocalBlocks: s.LocalBlocks, LocalSampled: s.LocalClients == "sampled"}
	if a, err := LookupAlgorithm(s.Name); err == nil && a.Own.Key != "" {
		o.Own = s.Section(a.Own.Key)
	}
	if s.LocalRoles != nil {
		o.LocalRoles, _ = localRoles(s.LocalRoles)
	}
	return o
}

// Strategy makes the named algorithm from the registry for validated, resolved settings.
func (s Settings) Strategy() Strategy {
	a, _ := LookupAlgorithm(s.Name)
	return a.New(s.Options())
}

// HyperSettings are the hypernetwork of FedTP, TransFed and pFedHN and its optimizer, the
// config's algorithm.hyper (FedTP's official code's values; pFedHN's official code uses
// the same trunk depth, momentum and weight decay).
type HyperSettings struct {
	// Embed is the client-embedding width. Unset: the algorithm's own: fedtp and transfed
	// 128 (FedTP's code; its paper's novel-client study: 32), pfedhn 1 + ⌊N/4⌋ for N
	// clients (pFedHN's code, --embed-dim -1).
	Embed *int64 `mapstructure:"embed" json:"embed"`
	// Hidden is the trunk width. Unset: fedtp and transfed 150 (FedTP's code), pfedhn 100
	// (pFedHN's code, --hyper-hid).
	Hidden      *int64   `mapstructure:"hidden" json:"hidden"`
	Layers      int      `mapstructure:"layers" json:"layers"`             // trunk linear layers; default 4 (both codes: one input layer, --n-hidden 3)
	LR          *float64 `mapstructure:"lr" json:"lr"`                     // β; default (unset) train.lr (the official code uses --lr for both)
	Momentum    float64  `mapstructure:"momentum" json:"momentum"`         // default 0.9; 0 for none
	WeightDecay float64  `mapstructure:"weight_decay" json:"weight_decay"` // default 1e-3; 0 for none
	// Rank is the rank of low-rank heads: each generated matrix W [out, in] is W0 + U V
	// with U [out, r], V [r, in] from two heads and W0 a learned shared base (engine/hyper);
	// 0 is one full head per generated parameter, as FedTP. Unset: the algorithm's own
	// (fedtp 0; transfed and pfedhn 0 while the full heads hold at most 2^28 parameters,
	// else 32: transfed keeps full heads on focalnet-cifar and takes rank 32 on FocalNet-T).
	Rank *int64 `mapstructure:"rank" json:"rank"`
}

// Default is the official codes' trunk depth and optimizer; the sizes are the algorithm's.
func (HyperSettings) Default() HyperSettings {
	return HyperSettings{Layers: 4, Momentum: 0.9, WeightDecay: 1e-3}
}

// Validate reports a hypernetwork that cannot be built or trained, naming its config key.
func (h HyperSettings) Validate() error {
	k := &check.Checker{}
	if h.Embed != nil {
		k.AtLeast("algorithm.hyper.embed", *h.Embed, 1)
	}
	if h.Hidden != nil {
		k.AtLeast("algorithm.hyper.hidden", *h.Hidden, 1)
	}
	k.AtLeast("algorithm.hyper.layers", int64(h.Layers), 1)
	if h.LR != nil {
		k.Real("algorithm.hyper.lr", *h.LR, 0, check.Inf, "(]")
	}
	k.Real("algorithm.hyper.momentum", h.Momentum, 0, 1, "[)")
	k.Real("algorithm.hyper.weight_decay", h.WeightDecay, 0, check.Inf, "[]")
	if h.Rank != nil {
		k.AtLeast("algorithm.hyper.rank", *h.Rank, 0)
	}
	return k.Err()
}

// localRoles reads algorithm.local_roles (never nil for a set key: an empty list keeps
// only local_blocks local).
func localRoles(names []string) ([]model.Role, error) {
	out := []model.Role{}
	for _, n := range names {
		r, ok := model.ParseRole(n)
		if !ok {
			return nil, fmt.Errorf("unknown role %q; choose from %v", n, roleNames())
		}
		out = append(out, r)
	}
	return out, nil
}

// generatedRoles reads algorithm.generate (nil when unset: the algorithm's own).
func generatedRoles(names []string) ([]model.Role, error) {
	var out []model.Role
	for _, n := range names {
		switch n {
		case "focal":
			out = append(out, model.FocalRoles()...)
			continue
		case "encoder":
			out = append(out, model.RoleAttnQKV, model.RoleAttnOut)
			out = append(out, model.FocalRoles()...)
			out = append(out, model.RoleMLP, model.RoleNorm)
			continue
		}
		r, ok := model.ParseRole(n)
		if !ok {
			return nil, fmt.Errorf("algorithm.generate: unknown role %q; choose focal, encoder or one of %v", n, roleNames())
		}
		out = append(out, r)
	}
	return out, nil
}

// roleNames are the role names a config may write.
func roleNames() []string {
	var valid []string
	for _, r := range model.Roles() {
		valid = append(valid, r.String())
	}
	return valid
}

// noneIfZero maps a config's 0 ("none") onto hyper.Config's spelling of none (negative),
// since hyper.Config reads 0 as "the official default".
func noneIfZero(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

// Reading lists the algorithms that read key (mu, local_roles, pfedme.lambda: a key under
// algorithm.), in the registry's order.
func Reading(key string) []string { return namesReading(key) }

// namesReading are the algorithms that read key, in the registry's order.
func namesReading(key string) []string {
	var out []string
	for _, a := range registry {
		if a.Reads(key) {
			out = append(out, a.Name)
		}
	}
	return out
}
