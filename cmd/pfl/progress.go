package main

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"

	"pfl/engine/experiment"
	"pfl/engine/fl"
)

// barObserver shows a run as a progress bar: round, ETA, last accuracy, samples/s.
type barObserver struct {
	bar     *progressbar.ProgressBar
	lastAcc string
}

func (b *barObserver) Round(m fl.RoundMetrics, done, total int, sps float64) {
	if b.bar == nil {
		b.bar = progressbar.NewOptions(total, progressbar.OptionSetDescription("rounds"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
		b.bar.Set(done - 1)
	}
	if m.Eval != nil {
		b.lastAcc = fmt.Sprintf(" acc %.2f%%", 100*m.Eval.Micro)
	}
	b.bar.Describe(fmt.Sprintf("loss %.4f%s %.0f samples/s", m.TrainLoss, b.lastAcc, sps))
	b.bar.Set(done)
	if done == total { // a suite's next run gets a bar of its own
		b.bar.Finish()
		b.bar, b.lastAcc = nil, ""
	}
}

func (b *barObserver) Log(msg string) {
	if b.bar != nil {
		b.bar.Clear()
	}
	fmt.Fprintln(os.Stderr, msg)
}

// observer is a progress bar when out is a terminal, else plain lines.
func observer(out io.Writer) experiment.Observer {
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return &barObserver{}
		}
	}
	return experiment.Lines{W: out}
}
