package experiment

import (
	"fmt"
	"time"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// Progress is where a run stands after a round, as an Observer receives it.
type Progress struct {
	Done, Total   int     // rounds done (this one included) and in all
	SamplesPerSec float64 // training throughput of this process's rounds so far
	// Left estimates the run's remaining wall time: its rounds left at the mean wall time of
	// its rounds so far less their evaluations, plus its evaluations left (every
	// train.eval_every rounds and after the last) at the mean time of those timed so far.
	// EvalsUntimed is set while evaluations are due and none has been timed yet: Left then
	// leaves them out and is a lower bound.
	Left         time.Duration
	EvalsUntimed bool
	// Run and Runs place the run in its suite or grid (run k of N; 0 outside one), and
	// AllLeft estimates the time the whole suite or grid has left: this run's Left, plus
	// its runs not yet started, each at the mean projected wall time of the runs trained so
	// far and this one (members and sweep points differ in cost: a rough figure until
	// several are done).
	Run, Runs int
	AllLeft   time.Duration
	cost      time.Duration // the run's projected wall time, all its rounds, at its pace
}

// TimeLeft says how long the run, and its suite or grid, have left: "about 1m20s left",
// "at least 40s left (evaluations not timed yet)", then in a suite or grid "; run 2/6,
// about 12m left in all"; "" when nothing is left.
func (p Progress) TimeLeft() string {
	about := "about"
	if p.EvalsUntimed {
		about = "at least"
	}
	var out string
	if p.Done < p.Total {
		out = fmt.Sprintf("%s %s left", about, roundDuration(p.Left))
		if p.EvalsUntimed {
			out += " (evaluations not timed yet)"
		}
	}
	if p.Runs > 0 && (p.Run < p.Runs || out != "") {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("run %d/%d, %s %s left in all", p.Run, p.Runs, about, roundDuration(p.AllLeft))
	}
	return out
}

// pace times a run's rounds to estimate the time it has left (Progress.Left).
type pace struct {
	rounds, evalEvery int
	last              time.Time     // when the last round ended (or the rounds began)
	train             time.Duration // the wall time of the rounds timed, less their evaluations
	trained           int
	eval              time.Duration // the time of the evaluations timed
	evals             int
}

// newPace starts timing the rounds of a run with schedule t, from start.
func newPace(t config.Train, start time.Time) *pace {
	return &pace{rounds: t.Rounds, evalEvery: t.EvalEvery, last: start}
}

// evalsAfter is how many evaluations the rounds after the first done hold: one every
// evalEvery rounds (none with 0) and one after the last round, as fl.Run evaluates.
func (p *pace) evalsAfter(done int) int {
	if done >= p.rounds {
		return 0
	}
	n := 1 // after the last round
	if p.evalEvery > 0 {
		n = p.rounds/p.evalEvery - done/p.evalEvery
		if p.rounds%p.evalEvery != 0 {
			n++
		}
	}
	return n
}

// round records round done (counted from 1), with metrics m, as ended at now, and returns
// the run's progress with throughput sps.
func (p *pace) round(m fl.RoundMetrics, done int, now time.Time, sps float64) Progress {
	wall := now.Sub(p.last)
	p.last = now
	if m.Eval != nil {
		p.eval += m.Time.Eval
		p.evals++
		wall -= m.Time.Eval
	}
	p.train += max(wall, 0)
	p.trained++
	perRound := p.train / time.Duration(p.trained)
	pr := Progress{Done: done, Total: p.rounds, SamplesPerSec: sps,
		Left: perRound * time.Duration(p.rounds-done), cost: perRound * time.Duration(p.rounds)}
	switch left := p.evalsAfter(done); {
	case p.evals > 0:
		perEval := p.eval / time.Duration(p.evals)
		pr.Left += perEval * time.Duration(left)
		pr.cost += perEval * time.Duration(p.evalsAfter(0))
	case left > 0:
		pr.EvalsUntimed = true
	}
	return pr
}

// runCounter announces each run of a suite or grid: "== run k/N <name>", the time since
// the first, and the time left estimated from the mean wall time of the runs it has timed
// (members of one suite differ in cost, so the estimate is rough until several are done).
type runCounter struct {
	total, k  int
	start     time.Time
	timed     int           // runs trained here (not skipped as finished before)
	timedWall time.Duration // their wall time
	runStart  time.Time
	cost      time.Duration // the current run's projected wall time, as its last round put it
	costs     time.Duration // the projected wall times of the runs trained before it
	costed    int
}

func newRunCounter(total int) *runCounter { return &runCounter{total: total, start: time.Now()} }

// next returns the line announcing the next run, named name, and starts its clock.
func (c *runCounter) next(name string) string {
	c.k++
	c.runStart, c.cost = time.Now(), 0
	line := fmt.Sprintf("== run %d/%d %s", c.k, c.total, name)
	if c.k == 1 {
		return line
	}
	line += fmt.Sprintf(" (%s elapsed", roundDuration(time.Since(c.start)))
	if c.timed > 0 {
		left := c.timedWall / time.Duration(c.timed) * time.Duration(c.total-c.k+1)
		line += fmt.Sprintf(", about %s left", roundDuration(left))
	}
	return line + ")"
}

// trained records that the current run trained (its time counts towards the estimate).
func (c *runCounter) trained() {
	c.timed++
	c.timedWall += time.Since(c.runStart)
	if c.cost > 0 { // it trained rounds here, not only read back what it had done
		c.costs += c.cost
		c.costed++
	}
}

// after estimates the time the runs after the current one take, the current run's
// projected wall time being cost: each at the mean projection of the runs trained here.
func (c *runCounter) after(cost time.Duration) time.Duration {
	n := c.total - c.k
	if n <= 0 {
		return 0
	}
	return (c.costs + cost) / time.Duration(c.costed+1) * time.Duration(n)
}

// observe wraps obs, the observer of the current run, to place each round's progress in
// the suite or grid: Progress.Run, Runs and AllLeft.
func (c *runCounter) observe(obs Observer) Observer { return counted{obs, c} }

// counted is the observer of one run of a suite or grid (runCounter.observe).
type counted struct {
	Observer
	c *runCounter
}

// Round fills in the run's place and the whole's time left, and passes the round on.
func (o counted) Round(m fl.RoundMetrics, p Progress) {
	o.c.cost = p.cost
	p.Run, p.Runs = o.c.k, o.c.total
	p.AllLeft = p.Left + o.c.after(p.cost)
	o.Observer.Round(m, p)
}

// roundDuration is d to the second (to the minute beyond an hour).
func roundDuration(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
