package experiment

import (
	"regexp"
	"testing"
)

// TestRunCounterAnnouncesEachRun: the first run is "run 1/N"; later ones add the elapsed
// time, and the time left once a run has been timed (none while every run so far was
// skipped as finished before).
func TestRunCounterAnnouncesEachRun(t *testing.T) {
	c := newRunCounter(3)
	steps := []struct {
		name    string
		trained bool
		want    string
	}{
		{"fedtp", true, `^== run 1/3 fedtp$`},
		{"fedavg", false, `^== run 2/3 fedavg \(\d+s elapsed, about \d+s left\)$`},
		{"local", false, `^== run 3/3 local \(\d+s elapsed, about \d+s left\)$`},
	}
	for _, s := range steps {
		if line := c.next(s.name); !regexp.MustCompile(s.want).MatchString(line) {
			t.Errorf("%q, want %s", line, s.want)
		}
		if s.trained {
			c.trained()
		}
	}
	skipped := newRunCounter(2)
	skipped.next("a")
	if line := skipped.next("b"); !regexp.MustCompile(`^== run 2/2 b \(\d+s elapsed\)$`).MatchString(line) {
		t.Errorf("after a skipped run: %q, want no estimate", line)
	}
}
