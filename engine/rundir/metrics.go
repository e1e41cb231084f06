package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"pfl/engine/fl"
	"pfl/engine/internal/jsonfloat"
)

// MetricsFile holds a run's rounds, one Line each.
const MetricsFile = "metrics.jsonl"

// Line is one line of metrics.jsonl. Its round counts from 1, as the console, the
// plots, TensorBoard and every table number rounds (fl.RoundMetrics' Round is the loop's
// 0-based index).
// Its floats are jsonfloat.Floats: a non-finite value (a diverged run's loss) is written as
// the string "NaN", "+Inf" or "-Inf".
type Line struct {
	Round     int               `json:"round"`
	Clients   []int             `json:"clients"`
	TrainLoss jsonfloat.Float   `json:"train_loss"`
	Samples   int               `json:"samples"`
	Micro     *jsonfloat.Float  `json:"accuracy,omitempty"`
	Mean      *jsonfloat.Float  `json:"client_mean,omitempty"`
	Std       *jsonfloat.Float  `json:"client_std,omitempty"`
	PerClient []jsonfloat.Float `json:"per_client,omitempty"`
	DataS     float64           `json:"time_data_s"`
	TrainS    float64           `json:"time_train_s"`
	AggS      float64           `json:"time_aggregate_s"`
	EvalS     float64           `json:"time_eval_s"`
}

// RoundLine is round m as metrics.jsonl writes it.
func RoundLine(m fl.RoundMetrics) Line {
	l := Line{Round: m.Round + 1, Clients: m.Clients, TrainLoss: jsonfloat.Float(m.TrainLoss), Samples: m.Samples,
		DataS: m.Time.Data.Seconds(), TrainS: m.Time.Train.Seconds(), AggS: m.Time.Aggregate.Seconds(), EvalS: m.Time.Eval.Seconds()}
	if e := m.Eval; e != nil {
		micro, mean, std := jsonfloat.Float(e.Micro), jsonfloat.Float(e.Mean), jsonfloat.Float(e.Std)
		l.Micro, l.Mean, l.Std, l.PerClient = &micro, &mean, &std, jsonfloat.Slice(e.Accuracy)
	}
	return l
}

// ParseMetrics reads metrics.jsonl: one JSON object per line, rounds numbered from 1 in
// order (a line that is not, or an unknown field, is an error naming the line). A file
// that numbers its rounds from 0, as pfl wrote them before, is read renumbered from 1.
func ParseMetrics(b []byte) ([]Line, error) {
	var out []Line
	first := 1 // the round number of the first line: 1, or 0 in an earlier pfl's file
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" && i == 0 {
			break // an empty file: no rounds yet
		}
		var m Line
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: data after the object", i+1)
		}
		if i == 0 && m.Round == 0 {
			first = 0
		}
		if m.Round != i+first {
			return nil, fmt.Errorf("line %d: round %d, want %d", i+1, m.Round, i+first)
		}
		m.Round = i + 1
		out = append(out, m)
	}
	return out, nil
}

// ReadMetrics reads the run's metrics.jsonl in dir; a note when it has no rounds to give
// (a run never started: no file, or an empty one).
func ReadMetrics(dir string) ([]Line, string, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no rounds yet (no metrics.jsonl): left out", nil
	}
	if err != nil {
		return nil, "", err
	}
	lines, err := ParseMetrics(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if len(lines) == 0 {
		return nil, "no rounds yet: left out", nil
	}
	return lines, "", nil
}

// FinalPerClient is the last evaluation's accuracy of every client (metrics.jsonl).
func FinalPerClient(dir string) ([]float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, err
	}
	lines, err := ParseMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, MetricsFile), err)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if pc := lines[i].PerClient; pc != nil {
			return jsonfloat.Float64s(pc), nil
		}
	}
	return nil, fmt.Errorf("%s has no evaluated round", dir)
}

// A Log writes a run's rounds as they end: a line each in metrics.jsonl and TensorBoard's
// events (tb/).
type Log struct {
	f   *os.File
	enc *json.Encoder
	tb  *tbLog
}

// OpenLog starts the run's metrics.jsonl and tb/ afresh and writes the rounds of history
// (a resumed run's: the lines of rounds after its checkpoint, a run killed mid-way,
// disappear); novel are the clients held out of training (the histogram leaves them out).
func OpenLog(dir string, history []fl.RoundMetrics, novel []int) (*Log, error) {
	f, err := os.Create(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, err
	}
	l := &Log{f: f, enc: json.NewEncoder(f)}
	for _, m := range history {
		if err := l.enc.Encode(RoundLine(m)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if l.tb, err = openTB(dir, history, novel); err != nil {
		f.Close()
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	return l, nil
}

// Round writes round m (and flushes TensorBoard's events, so that it sees every round).
func (l *Log) Round(m fl.RoundMetrics) error {
	if err := l.enc.Encode(RoundLine(m)); err != nil {
		return err
	}
	return l.tb.add(m)
}

// Close closes the files.
func (l *Log) Close() error {
	return errors.Join(l.tb.Close(), l.f.Close())
}
