package main

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"

	"pfl/engine/experiment"
	"pfl/engine/fl"
)

// barObserver shows a run as a progress bar on a terminal: round, elapsed time, loss, last
// accuracy, samples/s and the time left, the run's and in a suite or grid the whole's
// (experiment.Progress.TimeLeft: evaluations included, which the bar's own estimate, a rate
// of rounds, leaves out until it has seen some, and misjudges on a resumed run).
type barObserver struct {
	w, log  io.Writer // the bar's terminal; where events are written
	bar     *progressbar.ProgressBar
	lastAcc string
}

// Round moves the bar to the round and describes it.
func (b *barObserver) Round(m fl.RoundMetrics, p experiment.Progress) {
	if b.bar == nil {
		b.bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription("rounds"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionClearOnFinish())
		b.bar.Set(p.Done - 1)
	}
	if m.Eval != nil {
		b.lastAcc = fmt.Sprintf(" acc %.2f%%", 100*m.Eval.Micro)
	}
	left := p.TimeLeft()
	if left != "" {
		left = ", " + left
	}
	b.bar.Describe(fmt.Sprintf("loss %.4f%s %.0f samples/s%s", m.TrainLoss, b.lastAcc, p.SamplesPerSec, left))
	b.bar.Set(p.Done)
	if p.Done == p.Total { // a suite's next run gets a bar of its own
		b.bar.Finish()
		b.bar, b.lastAcc = nil, ""
	}
}

// Log writes msg on a line of its own, clearing the bar first.
func (b *barObserver) Log(msg string) {
	if b.bar != nil {
		b.bar.Clear()
	}
	fmt.Fprintln(b.log, msg)
}

// observer is a progress bar when out is a terminal (events on standard error, as before the
// bar is drawn again), else plain lines.
func observer(out io.Writer) experiment.Observer {
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return &barObserver{w: f, log: os.Stderr}
		}
	}
	return experiment.Lines{W: out}
}
