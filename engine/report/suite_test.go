package report

import (
	"strings"
	"testing"

	"pfl/engine/rundir"
)

// TestSuiteTableShowsDivergedAndFalling: a suite's table writes a diverged member as such,
// marks a falling curve in the trend column, and the reading under it ranks the others by
// the FedTP protocol's accuracy, calls each gap clear or within the spread, and names the
// diverged and the falling member.
func TestSuiteTableShowsDivergedAndFalling(t *testing.T) {
	runs := []Run{
		{Summary: rundir.Summary{Name: "local", TailMean: 0.90, TailStd: 0.01, TailEvals: 4}},
		{Summary: rundir.Summary{Name: "fedtp", Diverged: 26, Rounds: 25, ClientUpdates: 125}},
		{Summary: rundir.Summary{Name: "fedperfix", TailMean: 0.93, TailStd: 0.005, TailEvals: 4}},
		{Summary: rundir.Summary{Name: "transfed", TailMean: 0.89, TailStd: 0.01, TailEvals: 4, TailTrend: -0.2,
			Falling: "last evaluation 60.00, 27.40 points under its best (87.40 after round 50)"}},
	}
	got := table(runs, "")
	for _, want := range []string{
		"| fedtp | diverged at round 26 (training loss not finite) | – |",
		"| -20.00 falling |",
		"fedperfix 93.00 > local 90.00 (+3.00, clear of the spread 1.50) > transfed 89.00 (+1.00, within the spread 2.00).",
		"fedtp diverged at round 26",
		"transfed is falling: last evaluation 60.00",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

// TestTableShowsTrendAndNote checks that the suite's table has the trend column, says how
// to read it, and prints the config's note under the table, before the resources.
func TestTableShowsTrendAndNote(t *testing.T) {
	r := Run{Summary: rundir.Summary{Name: "fedavg", TailEvals: 3, TailTrend: 0.0123}}
	got := table([]Run{r}, "At this size no member beats Local.")
	for _, want := range []string{"| trend over last evals |", "| +1.23 |", "Trend: the rise of the least-squares line", "\nAt this size no member beats Local.\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "At this size") > strings.Index(got, "Resources per client") {
		t.Errorf("the note is not under the results table:\n%s", got)
	}
	if one := table([]Run{{Summary: rundir.Summary{Name: "x", TailEvals: 1}}}, ""); !strings.Contains(one, "| n/a |") {
		t.Errorf("one evaluation's trend is not n/a:\n%s", one)
	}
}
