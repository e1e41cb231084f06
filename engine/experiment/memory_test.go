package experiment

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTrainReportsMemory: a run logs its memory floor before the first round and its
// measured peak after the last, and the peak is at least the floor (the floor counts
// tensors the run really allocates; the process holds them and more).
func TestTrainReportsMemory(t *testing.T) {
	cfg := filled(Config{Name: "mem", Out: t.TempDir(),
		Data:      DataConfig{Dataset: "synthetic:200", Clients: 4, Partition: "iid"},
		Algorithm: AlgorithmConfig{Name: "fedavg"},
		Train:     TrainConfig{Rounds: 1, Participation: 0.5, Batch: 16, LR: 0.05, EvalEvery: 1}})
	var out bytes.Buffer
	if _, err := RunWith(context.Background(), cfg, Options{Observer: Lines{W: &out}}); err != nil {
		t.Fatal(err)
	}
	log := out.String()
	est := regexp.MustCompile(`memory: at least ([0-9.]+) GiB for models`).FindStringSubmatchIndex(log)
	peak := regexp.MustCompile(`peak memory: ([0-9.]+) GiB \(resident, VmHWM\)`).FindStringSubmatchIndex(log)
	round := strings.Index(log, "round 1/1")
	if est == nil || peak == nil || round < 0 || !(est[0] < round && round < peak[0]) {
		t.Fatalf("want the estimate, the round, then the peak; the log:\n%s", log)
	}
	floor, _ := strconv.ParseFloat(log[est[2]:est[3]], 64)
	hwm, _ := strconv.ParseFloat(log[peak[2]:peak[3]], 64)
	if !(hwm > 0) || hwm < floor {
		t.Fatalf("peak %g GiB, floor %g GiB: want a positive peak at least the floor", hwm, floor)
	}
}
