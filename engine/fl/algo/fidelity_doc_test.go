package algo

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pfl/engine/fl"
)

// TestFidelityDocHasASectionPerAlgorithm: docs/fidelity.md has a section ("## `name` — ...")
// for every algorithm of the registry, saying what it follows, what differs and why, and
// no section for a name the registry lacks.
func TestFidelityDocHasASectionPerAlgorithm(t *testing.T) {
	b, err := os.ReadFile("../../../docs/fidelity.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^## `([a-z0-9-]+)`")
	var sections []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			if slices.Contains(sections, m[1]) {
				t.Errorf("docs/fidelity.md has two sections for %s", m[1])
			}
			sections = append(sections, m[1])
		}
	}
	for _, a := range fl.Algorithms() {
		if !slices.Contains(sections, a.Name) {
			t.Errorf("docs/fidelity.md has no section \"## `%s`\"", a.Name)
		}
	}
	for _, s := range sections {
		if _, err := fl.LookupAlgorithm(s); err != nil {
			t.Errorf("docs/fidelity.md has a section for %s: %v", s, err)
		}
	}
}
