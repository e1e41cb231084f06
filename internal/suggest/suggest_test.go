package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"fedavg", "fedavg", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"fedavgg", "fedavg", 1}, // an insertion
		{"fedag", "fedavg", 1},   // a deletion
		{"fedtq", "fedtp", 1},    // a substitution
		{"fetdp", "fedtp", 1},    // a swap of neighbours
		{"kitten", "sitting", 3}, // the textbook pair
		{"vanillat", "vanilla-t", 1},
		{"ca", "abc", 3},          // the alignment distance: no character edited twice
		{"α-sweep", "a-sweep", 1}, // runes, not bytes
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	algorithms := []string{"fedavg", "fedbn", "fedper", "fedprox", "fedrep", "fedtp", "local", "vanilla-t"}
	configs := []string{"demo-fmnist", "demo-fedtp-fmnist", "fedtp-t2-suite", "fedtp-t3-suite", "study-fedtp-fmnist"}
	for _, c := range []struct {
		name  string
		known []string
		want  []string
		text  string
	}{
		{"fedavgg", algorithms, []string{"fedavg"}, " (did you mean fedavg?)"},
		{"FedAvg", algorithms, []string{"fedavg"}, " (did you mean fedavg?)"}, // case ignored
		{"fetdp", algorithms, []string{"fedtp"}, " (did you mean fedtp?)"},
		{"vanillat", algorithms, []string{"vanilla-t"}, " (did you mean vanilla-t?)"},
		{"fedpr", algorithms, []string{"fedper"}, " (did you mean fedper?)"}, // fedprox is 2 away, fedper 1
		{"fedre", algorithms, []string{"fedrep"}, " (did you mean fedrep?)"},
		{"fedxx", algorithms, []string{"fedbn", "fedtp"}, " (did you mean fedbn or fedtp?)"},                            // a tie: both
		{"aa", []string{"aa1", "aa2", "aa3", "aa4"}, []string{"aa1", "aa2", "aa3"}, " (did you mean aa1, aa2 or aa3?)"}, // at most 3
		{"scaffold", algorithms, nil, ""},                                                                               // nothing close: no guess
		{"x", algorithms, nil, ""},
		{"fedavg", algorithms, nil, ""}, // known: nothing to suggest
		{"demo-fmnst", configs, []string{"demo-fmnist"}, " (did you mean demo-fmnist?)"},
		{"fedtp-t2-suit", configs, []string{"fedtp-t2-suite"}, " (did you mean fedtp-t2-suite?)"},
		{"fedtp-t4-suite", configs, []string{"fedtp-t2-suite", "fedtp-t3-suite"}, " (did you mean fedtp-t2-suite or fedtp-t3-suite?)"},
		{"study-fedtp", configs, nil, ""}, // 6 edits: too far for 11 characters
		{"anything", nil, nil, ""},
	} {
		if got := Closest(c.name, c.known); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
		if got := DidYouMean(c.name, c.known); got != c.text {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.name, got, c.text)
		}
	}
}
