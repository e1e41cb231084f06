package main

import (
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"text/tabwriter"

	"pfl/cuda"
	"pfl/engine/model"
)

// modelsCmd prints every preset's parameters by role and FLOPs per sample, computed by
// the model code from its configuration (nothing is allocated). The size flags are the
// model factory's overrides (model.Spec); with any of them set, only the presets that take
// them all are listed, resized.
func modelsCmd(args []string, out io.Writer) error {
	fs := newFlags("models", out)
	only := fs.String("preset", "", "list only this preset")
	classes := fs.Int64("classes", 0, "number of classes (0: each preset's default)")
	var spec model.Spec
	for _, f := range []struct {
		dst        *int64
		name, help string
	}{{&spec.Image, "image", "input side"}, {&spec.Channels, "channels", "input channels"},
		{&spec.Depth, "depth", "blocks (every stage of a FocalNet)"}, {&spec.Patch, "patch", "ViT patch side"},
		{&spec.Dim, "dim", "token width"}, {&spec.Heads, "heads", "attention heads"}, {&spec.HeadDim, "head-dim", "attention head width"},
		{&spec.MLP, "mlp", "feed-forward width"}, {&spec.Prompts, "prompts", "ViT prompt tokens per block"},
		{&spec.Levels, "levels", "FocalNet focal levels"}, {&spec.SeqLen, "seq-len", "text sequence length"}} {
		fs.Int64Var(f.dst, f.name, 0, f.help+" (0: the preset's)")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *classes < 0 || *classes > maxClasses {
		return fmt.Errorf("-classes %d: want 0 (each preset's own) to %d", *classes, maxClasses)
	}
	if err := checkSizeFlags(spec); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tclasses\tparams\tfwd GFLOP\ttrain GFLOP\tparams by role\t")
	listed := 0
	for _, p := range model.Presets() {
		if *only != "" && p.Name != *only {
			continue
		}
		s := spec
		s.Preset = p.Name
		if !p.IsText() {
			s.Classes = *classes
		}
		if s.Check() != nil && *only == "" {
			continue // the overrides do not apply to this family
		}
		m, err := model.Build(s, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			return err
		}
		total, byRole := paramCounts(m.Params())
		var roles []model.Role
		for r := range byRole {
			roles = append(roles, r)
		}
		sort.Slice(roles, func(i, j int) bool { return byRole[roles[i]].Cmp(byRole[roles[j]]) > 0 })
		var parts []string
		for _, r := range roles {
			parts = append(parts, fmt.Sprintf("%s %s", r, human(byRole[r])))
		}
		c := s.Classes
		if c == 0 {
			c = p.Classes
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", p.Name, c, human(total),
			giga(model.ForwardFLOPs(m)), giga(model.TrainFLOPs(m)), strings.Join(parts, ", "))
		m.Close()
		listed++
	}
	if listed == 0 {
		if *only != "" {
			_, err := model.Lookup(*only)
			return err
		}
		return fmt.Errorf("no preset takes all of the size flags given")
	}
	return tw.Flush()
}

// checkSizeFlags bounds the size flags: no model anyone trains is larger, and the bound
// keeps every dimension of a declared tensor within an int64 (the counts themselves are
// kept in types that do not overflow: paramCounts, model.Model's MACs).
func checkSizeFlags(s model.Spec) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"image", s.Image}, {"channels", s.Channels}, {"depth", s.Depth}, {"patch", s.Patch}, {"dim", s.Dim},
		{"heads", s.Heads}, {"head-dim", s.HeadDim}, {"mlp", s.MLP}, {"prompts", s.Prompts}, {"levels", s.Levels}, {"seq-len", s.SeqLen}} {
		if f.v < 0 || f.v > maxSize {
			return fmt.Errorf("-%s %d: want 0 (the preset's) to %d", f.name, f.v, maxSize)
		}
	}
	if s.Depth > maxDepth {
		return fmt.Errorf("-depth %d: want 0 (the preset's) to %d", s.Depth, maxDepth)
	}
	return nil
}

// maxDepth bounds -depth: the listing declares every block's parameters of every preset
// (at 100,000 blocks that took 3 GB and 90 s), and no preset is deeper than a few dozen.
const maxDepth = 1_000

// maxSize bounds each size flag.
const maxSize = 100_000

// maxClasses bounds -classes: a head of more classes than this is no model anyone trains,
// and counts of absurd heads would overflow.
const maxClasses = 1_000_000

// paramCounts counts the trainable elements of ps, in all and by role, exactly: the size
// flags allow models (100,000 heads of width 100,000 in 100,000 blocks) whose counts, and
// even one tensor's, exceed an int64 (model.Set's Count would wrap).
func paramCounts(ps *model.Set) (*big.Int, map[model.Role]*big.Int) {
	total, byRole := new(big.Int), map[model.Role]*big.Int{}
	for _, p := range ps.List {
		if p.Buffer {
			continue
		}
		n := big.NewInt(1)
		for _, d := range p.Shape {
			n.Mul(n, big.NewInt(d))
		}
		if byRole[p.Role] == nil {
			byRole[p.Role] = new(big.Int)
		}
		byRole[p.Role].Add(byRole[p.Role], n)
		total.Add(total, n)
	}
	return total, byRole
}

// giga writes a FLOP count in GFLOP: three decimals, or four significant digits and an
// exponent for the sizes where three decimals would print twenty digits.
func giga(flops float64) string {
	g := flops / 1e9
	if g < 1e9 {
		return fmt.Sprintf("%.3f", g)
	}
	return fmt.Sprintf("%.4g", g)
}

// human writes a count with thousands separators.
func human(n *big.Int) string {
	s := n.String()
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
