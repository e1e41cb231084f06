package main

import (
	"fmt"
	"io"
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
		if m.MACs() < 0 || m.Params().Count() < 0 {
			m.Close()
			return fmt.Errorf("%s: the sizes given (-image, -patch, -dim, -heads, -head-dim, -mlp, -depth) make more parameters or multiply-accumulates than an int64 counts; make them smaller", p.Name)
		}
		byRole := m.Params().CountByRole()
		var roles []model.Role
		for r := range byRole {
			roles = append(roles, r)
		}
		sort.Slice(roles, func(i, j int) bool { return byRole[roles[i]] > byRole[roles[j]] })
		var parts []string
		for _, r := range roles {
			parts = append(parts, fmt.Sprintf("%s %s", r, human(byRole[r])))
		}
		c := s.Classes
		if c == 0 {
			c = p.Classes
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%s\t\n", p.Name, c, human(m.Params().Count()),
			model.ForwardFLOPs(m)/1e9, model.TrainFLOPs(m)/1e9, strings.Join(parts, ", "))
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

// checkSizeFlags bounds the size flags: their counts multiply, and absurd sizes would
// overflow the int64 counts.
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

// human writes a count with thousands separators.
func human(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
