package experiment

import "context"

// Planned is one run of an experiment as `pfl train` would start it.
type Planned struct {
	// Config is the run's config, resolved and validated; Out/Name is its directory.
	Config Config
	// Seeds is how many runs of the grid differ from this one only in their seed (1
	// outside a grid): they cost the same, so a dry run prepares one of them.
	Seeds int
}

// Plan returns the runs cfg makes, in the order `pfl train` runs them, each checked as
// its run would check it, with the data files each reads present: the run itself, every
// suite member, or every point × member of a grid (one entry for all its seeds). Nothing
// is written and no data is loaded.
func Plan(ctx context.Context, cfg Config) ([]Planned, error) {
	var runs []Planned
	switch {
	case cfg.IsGrid():
		g, err := newGrid(cfg)
		if err != nil {
			return nil, err
		}
		for _, l := range g.leaves {
			if l.seed == 0 {
				runs = append(runs, Planned{Config: l.cfg, Seeds: len(g.seeds)})
			}
		}
	case len(cfg.Suite) > 0:
		members, err := suiteMembers(cfg.Resolved())
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			runs = append(runs, Planned{Config: m, Seeds: 1})
		}
	default:
		c := cfg.Resolved()
		if err := c.Validate(); err != nil {
			return nil, err
		}
		runs = []Planned{{Config: c, Seeds: 1}}
	}
	configs := make([]Config, len(runs))
	for i, r := range runs {
		configs[i] = r.Config
	}
	if err := dataThere(ctx, configs); err != nil {
		return nil, err
	}
	return runs, nil
}
