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
// the model code from its configuration (nothing is allocated).
func modelsCmd(args []string, out io.Writer) error {
	fs := newFlags("models", out)
	classes := fs.Int64("classes", 0, "number of classes (0: each preset's default)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *classes < 0 || *classes > maxClasses {
		return fmt.Errorf("-classes %d: want 0 (each preset's own) to %d", *classes, maxClasses)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tclasses\tparams\tfwd GFLOP\ttrain GFLOP\tparams by role\t")
	for _, p := range model.Presets() {
		c := p.Classes
		if *classes > 0 {
			c = *classes
		}
		m, err := p.Build(c, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			return err
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%s\t\n", p.Name, c, human(m.Params().Count()),
			model.ForwardFLOPs(m)/1e9, model.TrainFLOPs(m)/1e9, strings.Join(parts, ", "))
	}
	return tw.Flush()
}

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
