package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"pfl/engine/rundir"
)

// reading is the paragraph printed under a suite's results table, computed from the runs
// it follows so that it cannot contradict the table: the members ranked by the FedTP
// protocol's accuracy, each gap to the next member against the two members' spreads, and
// every run that diverged or whose curve is falling. A gap counts as clear when it is larger
// than the sum of the two members' ± std over their last evaluations (how much each curve
// moved between those evaluations); a smaller gap is within the evaluations' spread. One
// run is one seed: across seeds the gaps move too, which only seeds: measures.
func reading(runs []Run) string {
	var ranked []*rundir.Summary
	var notes []string
	for _, r := range runs {
		s := &r.Summary
		switch {
		case s.Diverged != 0:
			notes = append(notes, fmt.Sprintf("%s diverged at round %d (its training loss was not finite; it has no accuracy to rank).", s.Name, s.Diverged))
			continue
		case s.Falling != "":
			notes = append(notes, fmt.Sprintf("%s is falling: %s.", s.Name, s.Falling))
		}
		if s.TailEvals > 0 {
			ranked = append(ranked, s)
		}
	}
	slices.SortStableFunc(ranked, func(a, b *rundir.Summary) int { return cmp.Compare(b.TailMean, a.TailMean) })
	var b strings.Builder
	b.WriteString("\nReading of this run, computed from the table above (FedTP protocol, one seed):")
	if len(ranked) > 0 {
		fmt.Fprintf(&b, " %s %.2f", ranked[0].Name, 100*ranked[0].TailMean)
		for i := 1; i < len(ranked); i++ {
			hi, lo := ranked[i-1], ranked[i]
			gap, spread := 100*(hi.TailMean-lo.TailMean), 100*(hi.TailStd+lo.TailStd)
			how := fmt.Sprintf("within the spread %.2f", spread)
			switch {
			case hi.TailEvals < 2 || lo.TailEvals < 2:
				how = "spread unknown: one evaluation"
			case gap > spread:
				how = fmt.Sprintf("clear of the spread %.2f", spread)
			}
			fmt.Fprintf(&b, " > %s %.2f (%+.2f, %s)", lo.Name, 100*lo.TailMean, gap, how)
		}
		b.WriteString(".")
	}
	for _, n := range notes {
		b.WriteString(" " + n)
	}
	b.WriteString(" Seeds (`seeds:`) give the spread across runs, which these gaps do not show.\n")
	return b.String()
}
