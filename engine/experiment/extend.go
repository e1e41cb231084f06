package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"pfl/engine/config"
	"pfl/engine/dist"
	"pfl/engine/rundir"
)

// ResumeSuiteAs continues the suite at cfg.Out/cfg.Name as ResumeSuite does, with cfg as its
// config: its config.json as it is, or with train.rounds changed (pfl train --resume DIR
// --set train.rounds=N), which gives every member that many rounds. A member continues from
// its checkpoint as a resumed run does, so its metrics equal those of a member trained to
// its rounds from the start; a member that diverged stays as it is. Any other change, and
// rounds below those a member's checkpoint holds, are refused before anything runs or is
// written, naming the key (lengthen); then the suite's config.json takes the new rounds.
func ResumeSuiteAs(ctx context.Context, cfg config.Config, opts Options) (*SuiteResult, error) {
	dir := filepath.Join(cfg.Out, cfg.Name)
	saved, err := rundir.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if len(saved.Suite) == 0 {
		return nil, fmt.Errorf("%s is a single run, not a suite", dir)
	}
	cfg = cfg.Resolved()
	members, err := config.Members(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	runs := make([]runRounds, len(members))
	for i, m := range members {
		runs[i] = runRounds{"suite member " + m.Name, filepath.Join(m.Out, m.Name), m.Train.Rounds}
	}
	if err := lengthen(ctx, dir, saved, cfg, runs); err != nil {
		return nil, err
	}
	return runMembers(ctx, dir, members, cfg.SuiteTable, true, opts)
}

// ResumeGridAs continues the grid (seeds or a sweep) at cfg.Out/cfg.Name as ResumeGrid does,
// with cfg, its config as written (unresolved, rundir.LoadGridConfig), as ResumeSuiteAs
// continues a suite: train.rounds may change, for every run of the grid that does not set
// its own (a suite member's), and nothing else.
func ResumeGridAs(ctx context.Context, cfg config.Config, opts Options) (*GridResult, error) {
	dir := filepath.Join(cfg.Out, cfg.Name)
	saved, err := rundir.LoadGridConfig(dir)
	if err != nil {
		return nil, err
	}
	if !saved.IsGrid() {
		return nil, fmt.Errorf("%s has neither seeds nor a sweep", dir)
	}
	g, err := config.NewGrid(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	runs := make([]runRounds, len(g.Runs))
	for i, l := range g.Runs {
		runs[i] = runRounds{g.Where(l.Point, l.Member, l.Seed), l.Dir(), l.Config.Train.Rounds}
	}
	if err := lengthen(ctx, dir, saved, g.Config, runs); err != nil {
		return nil, err
	}
	return runGrid(ctx, g, true, opts)
}

// runRounds is one run of a suite or grid as lengthen checks it: how messages name it, its
// directory and the rounds it is to have.
type runRounds struct {
	where, dir string
	rounds     int
}

// notShortened refuses to give the run fewer rounds than its checkpoint holds (shortened).
func (r runRounds) notShortened() error {
	done, err := rundir.CheckpointRounds(r.dir)
	if err != nil {
		return fmt.Errorf("%s: %w", r.where, err)
	}
	if done > r.rounds {
		return shortened(r, done)
	}
	return nil
}

// shortened is the error of run r given fewer rounds than the done rounds its checkpoint
// holds, naming train.rounds and them.
func shortened(r runRounds, done int) error {
	return fmt.Errorf("train.rounds = %d: %s (%s) has done %d rounds; a resume adds rounds and never takes any back: give train.rounds = %d or more",
		r.rounds, r.where, r.dir, done, done)
}

// lengthen checks cfg, the config the suite or grid in dir is to resume with, against
// saved, its config.json: only train.rounds may differ, and no run may be given fewer
// rounds than its checkpoint holds (a resume adds rounds; it cannot take back rounds
// trained, and a run's summary, figures and checkpoint are of all of them). When
// train.rounds differs, it then writes cfg as dir's config.json (rank 0 alone, under dir's
// lock), so that the suite's or grid's tables and a later resume follow it.
func lengthen(ctx context.Context, dir string, saved, cfg config.Config, runs []runRounds) error {
	changed, err := changedKeys(saved, cfg)
	if err != nil {
		return err
	}
	if other := slices.DeleteFunc(slices.Clone(changed), func(k string) bool { return k == "train.rounds" }); len(other) > 0 {
		return fmt.Errorf("%s: resuming a suite or grid may change train.rounds only, not %s (they define its runs; pfl train -c <config> starts another)",
			filepath.Join(dir, "config.json"), strings.Join(other, ", "))
	}
	for _, r := range runs {
		if err := r.notShortened(); err != nil {
			return err
		}
	}
	if len(changed) == 0 || !dist.Writes(dist.FromContext(ctx)) {
		return nil
	}
	unlock, err := rundir.Lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return rundir.WriteConfig(dir, cfg)
}

// changedKeys lists the keys whose values differ between a and b (sorted), leaving out
// name and out: where a run lies is not part of its config.
func changedKeys(a, b config.Config) ([]string, error) {
	fa, err := config.Flatten(a)
	if err != nil {
		return nil, err
	}
	fb, err := config.Flatten(b)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(fa)) {
		if k == "name" || k == "out" {
			continue
		}
		va, _ := json.Marshal(fa[k])
		vb, _ := json.Marshal(fb[k])
		if string(va) != string(vb) {
			out = append(out, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok && k != "name" && k != "out" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}
