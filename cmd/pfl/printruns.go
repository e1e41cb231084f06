package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"pfl/engine/config"
)

// maxRunSections is the most suite members and sweep points (each member at each point is
// one) --print-config details; the rest are counted. A sweep of three keys of five values
// and five members makes 625, which no one reads on a terminal.
const maxRunSections = 64

// perRun are the keys no run section lists: where the runs lie and what lays them out (the
// seed is in each section's title).
var perRun = []string{"name", "out", "seed", "seeds", "suite", "suite_table"}

// runSection is one suite member at one sweep point (seeds aside), as --print-config shows
// it: a title, its run's config (the first seed's, resolved) and the keys the member and
// the point set, each with who sets it.
type runSection struct {
	title string
	run   config.Config
	setBy map[string]string // key: "suite member fedtp", "sweep point data.alpha=0.1"
}

// memberNotes says, for each key that a suite member or the sweep sets, that the base
// config's value is not every run's: "every suite member sets it (below)", "suite members
// a, b set it (below)", "the sweep sets it (below)". A malformed member is left out here:
// runSections names it.
func memberNotes(cfg config.Config) map[string]string {
	by := map[string][]string{}
	for _, entry := range cfg.Suite {
		m, err := config.ParseMember(entry)
		if err != nil {
			continue
		}
		for _, kv := range m.Sets {
			if !slices.Contains(by[kv[0]], m.Label) {
				by[kv[0]] = append(by[kv[0]], m.Label)
			}
		}
	}
	notes := map[string]string{}
	for key, labels := range by {
		switch {
		case len(labels) == len(cfg.Suite) && len(labels) > 1:
			notes[key] = "every suite member sets its own (below)"
		case len(labels) == 1:
			notes[key] = "suite member " + labels[0] + " sets its own (below)"
		default:
			notes[key] = "suite members " + strings.Join(labels, ", ") + " set their own (below)"
		}
	}
	for _, a := range cfg.Sweep {
		notes[a.Key] = "the sweep sets it (below)"
	}
	return notes
}

// runSections lays cfg out as --print-config details it: one section per suite member of a
// suite, one per sweep point and member of a grid (its seeds in the title); none for a
// single run or for seeds alone, whose runs differ from the config above in their seed only.
func runSections(cfg config.Config) ([]runSection, error) {
	if !cfg.IsGrid() {
		if len(cfg.Suite) == 0 {
			return nil, nil
		}
		members, err := config.Members(cfg)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		out := make([]runSection, len(members))
		for i, m := range members {
			out[i] = runSection{title: "suite member " + m.Name + ": " + filepath.Join(m.Out, m.Name), run: m,
				setBy: memberSets(cfg.Suite[i])}
		}
		return out, nil
	}
	g, err := config.NewGrid(cfg)
	if err != nil {
		return nil, err
	}
	if len(g.Members) == 0 && len(cfg.Sweep) == 0 {
		return nil, nil
	}
	var out []runSection
	for _, l := range g.Runs {
		if l.Seed != 0 {
			continue
		}
		s := runSection{run: l.Config, setBy: map[string]string{}}
		var where []string
		if p := g.Points[l.Point]; p.Name != "" {
			where = append(where, "sweep point "+p.Name)
			for _, kv := range p.Sets {
				s.setBy[kv[0]] = "sweep point " + p.Name
			}
		}
		if len(g.Members) > 0 {
			where = append(where, "suite member "+g.Members[l.Member])
			for k, v := range memberSets(cfg.Suite[l.Member]) {
				s.setBy[k] = v
			}
		}
		dir := l.Dir()
		if len(cfg.Seeds) > 0 {
			dir = filepath.Join(filepath.Dir(dir), "seed-<s>") + fmt.Sprintf(" for seeds %s", seedList(g.Seeds))
		}
		s.title = strings.Join(where, ", ") + ": " + dir
		out = append(out, s)
	}
	return out, nil
}

// memberSets maps each key a suite entry sets to "suite member <label>".
func memberSets(entry string) map[string]string {
	out := map[string]string{}
	if m, err := config.ParseMember(entry); err == nil {
		for _, kv := range m.Sets {
			out[kv[0]] = "suite member " + m.Label
		}
	}
	return out
}

// seedList writes seeds as "1, 2, 3".
func seedList(seeds []uint64) string {
	s := make([]string, len(seeds))
	for i, v := range seeds {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

// printRuns writes, below the base config, a section per suite member and sweep point
// (runSections): the keys the member or point sets, with the values its run resolves them
// to, and the keys whose resolved values follow from them (a model's size from the
// member's preset, novel.lr from its train.lr), marked "resolved". At most maxRunSections
// sections; the rest are counted.
func printRuns(out io.Writer, cfg config.Config) error {
	sections, err := runSections(cfg)
	if err != nil || len(sections) == 0 {
		return err
	}
	base := cfg.Resolved()
	for i, s := range sections {
		if i == maxRunSections {
			fmt.Fprintf(out, "\n# … %d more runs (sweep points × suite members) not shown\n", len(sections)-i)
			break
		}
		fmt.Fprintf(out, "\n# %s\n", shown(s.title))
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, key := range config.Keys() {
			if slices.Contains(perRun, key) {
				continue
			}
			v, err := s.run.ValueJSON(key)
			if err != nil {
				return err
			}
			was, err := base.ValueJSON(key)
			if err != nil {
				return err
			}
			source, set := s.setBy[key]
			if !set && v == was {
				continue
			}
			if !set {
				source = "resolved"
			}
			fmt.Fprintf(tw, "%s: %s\t# %s\n", key, shown(v), shown(source))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
