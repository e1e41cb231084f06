package algo

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"pfl/engine/fl"
	"pfl/engine/model"
)

// Partial keeps the parameters of some roles, and every parameter of some blocks, with
// their clients and averages the rest: FedPerfix's partial personalization (Sun et al.,
// ICCV 2023, §3.2–3.3), as its official code's Partial wrapper does with the substrings of
// --local_parts (pfl selects by role and block index, never by name). It is the
// algorithm of FedPerfix's layer-sensitivity study (§3.3, Table 1: one layer type local,
// alone or with the head) and the base of FedPerfix and its plug-in variants.
type Partial struct {
	Label  string       // the registry name
	Roles  []model.Role // roles kept local
	Blocks []int        // block indices whose every parameter is kept local (FedPerfix's blocks.11 on CIFAR-100)
	// PlugIn is the model plug-in the algorithm personalizes (nil: none); Shape adds it
	// with its defaults when the configured model lacks it.
	PlugIn *PlugIn
}

// Name is the registry name.
func (p Partial) Name() string { return p.Label }

// Personal keeps the configured roles and blocks local.
func (p Partial) Personal(param *model.Param) bool {
	return slices.Contains(p.Roles, param.Role) || (param.Block >= 0 && slices.Contains(p.Blocks, param.Block))
}

// PlugIn is a ViT plug-in of FedPerfix's Table 6 with the defaults an algorithm adds when
// the configured model has none.
type PlugIn struct {
	Name    string // as errors spell it: "prefix", "prompts", "adapter"
	Prefix  model.PrefixConfig
	Kinds   []model.PrefixKind // the prefix kinds the algorithm accepts (Prefix.Kind first)
	Prompts int64
	Adapter model.MLPAdapterConfig
}

// PrepareHooks give the model its plug-in (Shape).
func (p Partial) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Shape: p.Shape} }

// Shape gives the model the plug-in: the algorithm's defaults for every field the spec
// leaves zero (the prefix's Blocks: every block), the spec's own values for the rest.
func (p Partial) Shape(s model.Spec) (model.Spec, error) {
	pi := p.PlugIn
	if pi == nil {
		return s, nil
	}
	pr, err := model.Lookup(s.Preset)
	if err != nil {
		return s, err
	}
	field := map[string]string{"prefix": "Prefix", "prompts": "Prompts", "adapter": "Adapter"}[pi.Name]
	if !pr.Takes(field) {
		return s, fmt.Errorf("algorithm %s needs a ViT with %s; model %s cannot take them (choose a ViT preset)", p.Label, pi.Name, s.Preset)
	}
	or := func(v, def int64) int64 {
		if v != 0 {
			return v
		}
		return def
	}
	orF := func(v, def float64) float64 {
		if v != 0 {
			return v
		}
		return def
	}
	switch pi.Name {
	case "prefix":
		depth, err := s.ResolvedDepth()
		if err != nil {
			return s, err
		}
		d, c := pi.Prefix, s.Prefix
		c.Kind, c.Init, c.Form = cmp.Or(c.Kind, d.Kind), cmp.Or(c.Init, d.Init), cmp.Or(c.Form, d.Form)
		if !slices.Contains(pi.Kinds, c.Kind) {
			return s, fmt.Errorf("algorithm %s keeps %s prefixes local, but model.prefix.kind is %s", p.Label, kindList(pi.Kinds), c.Kind)
		}
		if d.Init != "" && c.Init != d.Init {
			return s, fmt.Errorf("algorithm %s starts its prefixes with init %s, but model.prefix.init is %s", p.Label, d.Init, c.Init)
		}
		switch c.Kind {
		case model.PrefixAdapter:
			c.Mid = or(c.Mid, d.Mid)
		case model.PrefixTokens:
			c.Length = or(c.Length, prefixTokens)
			c.Form = cmp.Or(s.Prefix.Form, model.PrefixConcat) // tokens only enter as extra keys
		}
		c.Blocks = or(c.Blocks, depth)
		c.Scale = orF(c.Scale, d.Scale)
		s.Prefix = c
	case "prompts":
		s.Prompts = or(s.Prompts, pi.Prompts)
	default:
		s.Adapter.Mid = or(s.Adapter.Mid, pi.Adapter.Mid)
		s.Adapter.Scale = orF(s.Adapter.Scale, pi.Adapter.Scale)
	}
	return s, nil
}

// FedPerfix's defaults (official preset "FedPerfix"): a prefix adapter in every block
// with a bottleneck of 256 and scale s = 1.5, kept local with the head. On CIFAR-100 the
// official preset also keeps the whole last block local (algorithm.local_blocks: [11]).
var (
	fedPerfixPrefix = model.PrefixConfig{Mid: 256, Scale: 1.5, Kind: model.PrefixAdapter}
	fedPerfixLocal  = []model.Role{model.RoleAdapter, model.RoleHead}
)

// prefixTokens is the number of prefix tokens per block when Prefix-Z/R use the paper's
// tokens (model.prefix.kind: tokens) and the model gives none: the paper does not say;
// 10 is pfl's choice.
const prefixTokens = 10

// kindList is "linear or tokens".
func kindList(kinds []model.PrefixKind) string {
	var names []string
	for _, k := range kinds {
		names = append(names, string(k))
	}
	return strings.Join(names, " or ")
}

// promptTokens is the number of deep prompt tokens per block the prompts variant adds when
// the model has none. FedPerfix's paper does not give it and its prompt code does not run
// as released; 10 is pfl's choice (VPT's smallest deep setting).
const promptTokens = 10

// adapterMid is the MLP adapters' bottleneck when the model has none: the official code's
// --mid_dim default (512), which its adapter variant uses.
const adapterMid = 512

// FedPerfix is FedPerfix (Sun et al., ICCV 2023, §3.5, Eq. 4–5): the prefix adapters and
// the head are personal, everything else is FedAvg'd; the model gets prefix adapters in
// every block (mid 256, s = 1.5, the official additive form) unless it has its own.
func FedPerfix(o fl.Options) fl.Strategy {
	return partialOf("fedperfix", o, fedPerfixLocal, &PlugIn{Name: "prefix", Prefix: fedPerfixPrefix,
		Kinds: []model.PrefixKind{model.PrefixAdapter}})
}

// PrefixZ is Table 6's "Prefix-Z", vanilla prefix-tuning with zero-initialized prefixes,
// local with the head. By default as the official code runs it (`--vanilla zero`): one
// Linear(dim → 2·inner) per block whose output, times s = 1.5, is added to K and V, so the
// model starts exactly as the global one; model.prefix.kind: tokens (with form concat)
// is the paper's Eq. 3 instead.
func PrefixZ(o fl.Options) fl.Strategy {
	return partialOf("prefix-z", o, fedPerfixLocal, &PlugIn{Name: "prefix",
		Prefix: model.PrefixConfig{Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitZero},
		Kinds:  []model.PrefixKind{model.PrefixLinear, model.PrefixTokens}})
}

// PrefixR is Table 6's "Prefix-R": Prefix-Z with randomly initialized prefixes (PyTorch's
// default Linear init, the official `--vanilla random`).
func PrefixR(o fl.Options) fl.Strategy {
	return partialOf("prefix-r", o, fedPerfixLocal, &PlugIn{Name: "prefix",
		Prefix: model.PrefixConfig{Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitDefault},
		Kinds:  []model.PrefixKind{model.PrefixLinear, model.PrefixTokens}})
}

// PromptsVariant keeps deep prompt tokens (and the head) local: Table 6's "Prompts", built
// from the paper's description since the official prompt code does not run.
func PromptsVariant(o fl.Options) fl.Strategy {
	return partialOf("prompts", o, []model.Role{model.RolePrompt, model.RoleHead}, &PlugIn{Name: "prompts", Prompts: promptTokens})
}

// AdaptersVariant keeps an adapter after every block's MLP (and the head) local: Table 6's
// "Adapters" (the paper's per-block adapters; the official code shares one module).
func AdaptersVariant(o fl.Options) fl.Strategy {
	return partialOf("adapters", o, []model.Role{model.RoleAdapter, model.RoleHead}, &PlugIn{Name: "adapter", Adapter: model.MLPAdapterConfig{Mid: adapterMid, Scale: 1}})
}

// partialOf is a Partial with the configured local roles and blocks, or the defaults.
func partialOf(name string, o fl.Options, roles []model.Role, pi *PlugIn) Partial {
	if o.LocalRoles != nil {
		roles = o.LocalRoles
	}
	return Partial{Label: name, Roles: roles, Blocks: o.LocalBlocks, PlugIn: pi}
}

// checkPartial is partial's check across keys (its registry entry): it keeps local only
// what it is told to.
func checkPartial(s fl.Settings, _ fl.Section, _ int) error {
	if len(s.LocalRoles) == 0 && len(s.LocalBlocks) == 0 {
		return fmt.Errorf("algorithm.local_roles: empty; algorithm partial keeps local only what local_roles and local_blocks list")
	}
	return nil
}
