package experiment

import (
	"context"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

// Session is a prepared experiment with no run directory: the data on the device and the
// federated run, ready for rounds. `pfl bench` drives its workloads through sessions, so a
// benchmark times exactly the code `pfl train` runs (data upload, model factory, precision,
// algorithm registry); Run adds the run directory, metrics, checkpoints and plots.
type Session struct {
	se  *session
	dev cuda.Device
	cfg config.Config
}

// Open validates cfg and prepares it (nothing is written).
func Open(ctx context.Context, cfg config.Config) (*Session, error) {
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	se, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Session{se: se, dev: cfg.Device, cfg: cfg}, nil
}

// Memory is what `pfl train` prints about memory before the first round: the floor
// (models, optimizer state, hypernetwork) beside what the device has free and, on the
// CPU, the training peak expected from measured steps when the run could measure them.
func (s *Session) Memory() []string {
	lines := []string{memoryEstimate(s.se.floor, s.dev)}
	if s.se.expected != "" {
		lines = append(lines, s.se.expected)
	}
	return lines
}

// Warnings are what `pfl train` warns of before the first round (clients that never take
// a training step); none: nil.
func (s *Session) Warnings() []string {
	if s.se.warning == "" {
		return nil
	}
	return []string{s.se.warning}
}

// Run is the session's federated run: Round, Evaluate, GraphStatus.
func (s *Session) Run() *fl.Run { return s.se.run }

// Checkpoint saves the run's state and history into dir (checkpoint.safetensors, written
// atomically) as `pfl train` saves them every train.checkpoint_every rounds, recording
// wall as the seconds its rounds took; `pfl bench` times it.
func (s *Session) Checkpoint(dir string, wall float64) error {
	return rundir.SaveCheckpoint(dir, s.cfg, s.se.run, wall)
}

// Close frees the run and the data.
func (s *Session) Close() { s.se.close() }
