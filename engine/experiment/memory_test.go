package experiment

import (
	"bytes"
	"context"
	"math"
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
	est := regexp.MustCompile(`memory: at least ([0-9.]+ [MG]iB) for models`).FindStringSubmatchIndex(log)
	peak := regexp.MustCompile(`peak memory: ([0-9.]+ [MG]iB) \(resident, VmHWM\)`).FindStringSubmatchIndex(log)
	round := strings.Index(log, "round 1/1")
	if est == nil || peak == nil || round < 0 || !(est[0] < round && round < peak[0]) {
		t.Fatalf("want the estimate, the round, then the peak; the log:\n%s", log)
	}
	floor, hwm := mib(log[est[2]:est[3]]), mib(log[peak[2]:peak[3]])
	if !(hwm > 0) || hwm < floor {
		t.Fatalf("peak %g MiB, floor %g MiB: want a positive peak at least the floor", hwm, floor)
	}
}

// mib reads "12 MiB" or "1.5 GiB" in MiB; NaN when malformed.
func mib(v string) float64 {
	num, unit, _ := strings.Cut(v, " ")
	x, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return math.NaN()
	}
	if unit == "GiB" {
		x *= 1024
	}
	return x
}
