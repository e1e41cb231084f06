package experiment

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

// CheckKeysRead refuses an algorithm key that cfg sets and no run of it reads, naming the
// key and the algorithms that do read it: a value given must be honoured or refused. Each
// algorithm reads its own section (algorithm.pfedme.* for pfedme) and some shared keys
// (`pfl algorithms NAME` lists them); a key counts as set when its value differs from the
// default. A suite's or grid's runs share the config's algorithm section, so there a key
// is refused only when none of them reads it, and the runs that do not read it ignore it
// (algorithm.mu beside a fedprox member); a key that a member's entry or a sweep sets must
// be read by each run it is set for. pfl train checks a config with it before it runs or
// dry-runs it; a run's config.json, written by pfl, is not checked again.
func CheckKeysRead(cfg Config) error {
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
	set, err := algorithmKeysSet(cfg)
	if err != nil {
		return err
	}
	for _, key := range set {
		read := false
		var algorithms []string
		for _, r := range runs {
			read = read || reads(r.algorithm, key)
			if !slices.Contains(algorithms, r.algorithm) {
				algorithms = append(algorithms, r.algorithm)
			}
		}
		switch {
		case read:
		case len(runs) == 1:
			return fmt.Errorf("%s: set, but algorithm %s does not read it%s; remove it", key, runs[0].algorithm, readersOf(key))
		default:
			return fmt.Errorf("%s: set, but none of the runs' algorithms (%s) reads it%s; remove it", key, strings.Join(algorithms, ", "), readersOf(key))
		}
	}
	return nil
}

// keyRuns are cfg's runs: each point × member of a grid (its seeds run the same
// algorithm), each suite member, or cfg itself.
func keyRuns(cfg Config) ([]keyRun, error) {
	var members []member
	for _, entry := range cfg.Suite {
		m, err := parseMember(entry)
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
		g, err := newGrid(cfg)
		if err != nil {
			return nil, err
		}
		var runs []keyRun
		for _, l := range g.leaves {
			if l.seed > 0 {
				continue
			}
			p := g.points[l.point]
			own := algorithmKeys(p.sets)
			if len(members) > 0 {
				own = append(own, algorithmKeys(members[l.member].sets)...)
			}
			runs = append(runs, keyRun{l.cfg.Algorithm.Name, own, g.where(p, l.member, 0)})
		}
		return runs, nil
	}
	if len(members) == 0 {
		return []keyRun{{algorithm: cfg.Algorithm.Name, where: "the run"}}, nil
	}
	var runs []keyRun
	for _, m := range members {
		mc, err := m.apply(cfg)
		if err != nil {
			return nil, fmt.Errorf("suite member %s: %w", m.label, err)
		}
		runs = append(runs, keyRun{mc.Algorithm.Name, algorithmKeys(m.sets), "suite member " + m.label})
	}
	return runs, nil
}

// algorithmKeysSet lists, sorted, the algorithm keys (but algorithm.name) whose values in
// cfg differ from their defaults; the keys that follow train.lr when unset
// (algorithm.hyper.lr, algorithm.pfedme.personal_lr) are compared with it.
func algorithmKeysSet(cfg Config) ([]string, error) {
	def := DefaultConfig()
	def.Train.LR = cfg.Train.LR
	have, err := flatten(cfg.Resolved())
	if err != nil {
		return nil, err
	}
	want, err := flatten(def.Resolved())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(have)) {
		if strings.HasPrefix(key, "algorithm.") && key != "algorithm.name" && !jsonEqual(have[key], want[key]) {
			out = append(out, key)
		}
	}
	return out, nil
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
