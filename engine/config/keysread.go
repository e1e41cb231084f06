package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"pfl/engine/fl"
)

// keyRun is one run of a config as CheckKeysRead sees it: its algorithm, the algorithm
// keys its own entry sets (a suite member's, a sweep point's), and its name for messages.
type keyRun struct {
	algorithm string
	own       []string
	where     string
}

// CheckKeysRead refuses an algorithm key given for runs none of which reads it, naming
// the key, who gave it and the algorithms that do read it: a value given must be honoured
// or refused. Each algorithm reads its own section (algorithm.pfedme.* for pfedme) and
// some shared keys (`pfl algorithms NAME` lists them). given maps the keys given for the
// runs actually started (pfl train's --set and PFL_* variables) to who gave them ("--set
// algorithm.mu=0.1"): each must be read by one of cfg's runs. A suite member's entry
// gives keys for that member, and a sweep for its points: each must be read by the run it
// is given for. A config file's algorithm section is not checked: it is shared by a
// suite's members, and a file may be run with another algorithm.name (--set
// algorithm.name=fedavg), each run reading its algorithm's keys and ignoring the rest.
func CheckKeysRead(cfg Config, given map[string]string) error {
	runs, err := keyRuns(cfg)
	if err != nil {
		return err
	}
	for _, r := range runs {
		for _, key := range r.own {
			if !reads(r.algorithm, key) {
				return fmt.Errorf("%s: %s sets it, but algorithm %s does not read it%s; remove it", key, r.where, r.algorithm, readersOf(key))
			}
		}
	}
	var algorithms []string
	for _, r := range runs {
		if !slices.Contains(algorithms, r.algorithm) {
			algorithms = append(algorithms, r.algorithm)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(given)) {
		if !strings.HasPrefix(key, "algorithm.") || key == "algorithm.name" ||
			slices.ContainsFunc(runs, func(r keyRun) bool { return reads(r.algorithm, key) }) {
			continue
		}
		what := "algorithm " + algorithms[0] + " does not read it"
		if len(runs) > 1 {
			what = "none of the runs' algorithms (" + strings.Join(algorithms, ", ") + ") reads it"
		}
		return fmt.Errorf("%s: %s, but %s%s; remove it", key, given[key], what, readersOf(key))
	}
	return nil
}

// keyRuns are cfg's runs: each point × member of a grid (its seeds run the same
// algorithm), each suite member, or cfg itself.
func keyRuns(cfg Config) ([]keyRun, error) {
	var members []Member
	for _, entry := range cfg.Suite {
		m, err := ParseMember(entry)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		members = append(members, m)
	}
	algorithmKeys := func(sets [][2]string) []string {
		var out []string
		for _, kv := range sets {
			if strings.HasPrefix(kv[0], "algorithm.") && kv[0] != "algorithm.name" {
				out = append(out, kv[0])
			}
		}
		return out
	}
	if cfg.IsGrid() {
		g, err := NewGrid(cfg)
		if err != nil {
			return nil, err
		}
		var runs []keyRun
		for _, l := range g.Runs {
			if l.Seed > 0 {
				continue
			}
			own := algorithmKeys(g.Points[l.Point].Sets)
			if len(members) > 0 {
				own = append(own, algorithmKeys(members[l.Member].Sets)...)
			}
			runs = append(runs, keyRun{l.Config.Algorithm.Name, own, g.Where(l.Point, l.Member, 0)})
		}
		return runs, nil
	}
	if len(members) == 0 {
		return []keyRun{{algorithm: cfg.Algorithm.Name, where: "the run"}}, nil
	}
	var runs []keyRun
	for _, m := range members {
		mc, err := m.Apply(cfg)
		if err != nil {
			return nil, fmt.Errorf("suite member %s: %w", m.Label, err)
		}
		runs = append(runs, keyRun{mc.Algorithm.Name, algorithmKeys(m.Sets), "suite member " + m.Label})
	}
	return runs, nil
}

// reads reports whether the algorithm named reads the key (algorithm.mu, an unknown
// algorithm reads everything: Validate names it).
func reads(algorithm, key string) bool {
	a, err := fl.LookupAlgorithm(algorithm)
	return err != nil || a.Reads(strings.TrimPrefix(key, "algorithm."))
}

// readersOf is " (a, b read it)" for the algorithms that read key, for messages.
func readersOf(key string) string {
	names := fl.Reading(strings.TrimPrefix(key, "algorithm."))
	switch len(names) {
	case 0:
		return ""
	case 1:
		return " (only " + names[0] + " does)"
	}
	return " (" + strings.Join(names, ", ") + " do)"
}
