package experiment

import (
	"context"
	"fmt"

	"pfl/engine/config"
	"pfl/engine/data/fetch"
)

// Planned is one run of an experiment as `pfl train` would start it.
type Planned struct {
	// Config is the run's config, resolved and validated; Out/Name is its directory.
	Config config.Config
	// Seeds is how many runs of the grid differ from this one only in their seed (1
	// outside a grid): they cost the same, so a dry run prepares one of them.
	Seeds int
}

// Plan returns the runs cfg makes, in the order `pfl train` runs them, each checked as
// its run would check it, with the data files each reads present: the run itself, every
// suite member, or every point × member of a grid (one entry for all its seeds). Nothing
// is written and no data is loaded.
func Plan(ctx context.Context, cfg config.Config) ([]Planned, error) {
	var runs []Planned
	switch {
	case cfg.IsGrid():
		g, err := config.NewGrid(cfg)
		if err != nil {
			return nil, err
		}
		for _, l := range g.Runs {
			if l.Seed == 0 {
				runs = append(runs, Planned{Config: l.Config, Seeds: len(g.Seeds)})
			}
		}
	case len(cfg.Suite) > 0:
		members, err := config.Members(cfg)
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
	configs := make([]config.Config, len(runs))
	for i, r := range runs {
		configs[i] = r.Config
	}
	if err := dataThere(ctx, configs); err != nil {
		return nil, err
	}
	return runs, nil
}

// dataThere checks, before a suite or grid writes anything, that the data of each of its
// runs is where data.dataset says or in the data folder (a run with data.download fetches
// it when it starts), so that missing data is an error naming pfl data get, not a
// directory of a start that failed.
func dataThere(ctx context.Context, runs []config.Config) error {
	seen := map[string]bool{}
	for _, c := range runs {
		if c.Data.Download || seen[c.Data.Dataset] {
			continue
		}
		seen[c.Data.Dataset] = true
		if _, err := fetch.Resolve(ctx, c.Data.Dataset, false, fetch.Options{}); err != nil {
			return fmt.Errorf("%s: data.dataset: %w", c.Name, err)
		}
	}
	return nil
}
