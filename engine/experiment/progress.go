package experiment

import (
	"fmt"
	"time"
)

// runCounter announces each run of a suite or grid: "== run k/N <name>", the time since
// the first, and the time left estimated from the mean wall time of the runs it has timed
// (members of one suite differ in cost, so the estimate is rough until several are done).
type runCounter struct {
	total, k  int
	start     time.Time
	timed     int           // runs trained here (not skipped as finished before)
	timedWall time.Duration // their wall time
	runStart  time.Time
}

func newRunCounter(total int) *runCounter { return &runCounter{total: total, start: time.Now()} }

// next returns the line announcing the next run, named name, and starts its clock.
func (c *runCounter) next(name string) string {
	c.k++
	c.runStart = time.Now()
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
}

// roundDuration is d to the second (to the minute beyond an hour).
func roundDuration(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
