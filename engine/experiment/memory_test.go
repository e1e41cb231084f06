package experiment

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
)

// TestTrainReportsMemory: a run logs its memory floor before the first round and its
// measured peak after the last, and the peak is at least the floor (the floor counts
// tensors the run really allocates; the process holds them and more).
func TestTrainReportsMemory(t *testing.T) {
	cfg := filled(config.Config{Name: "mem", Out: t.TempDir(),
		Data:      config.Data{Dataset: "synthetic:200", Clients: 4, Partition: "iid"},
		Algorithm: fl.Settings{Name: "fedavg"},
		Train:     config.Train{Rounds: 1, Participation: 0.5, Batch: 16, LR: 0.05, EvalEvery: 1}})
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
	// with the CPU cache on, the expected training peak comes before the first round
	if _, ok := cuda.HostCache(); ok {
		exp := regexp.MustCompile(`memory: ([0-9.]+ [MG]iB) resident now; training adds about ([0-9.]+ [MG]iB) per client \(one probe step\), (\d+) at once: about ([0-9.]+ [MG]iB) expected`).FindStringSubmatchIndex(log)
		if exp == nil || exp[0] > round {
			t.Fatalf("want the expected peak before the first round; the log:\n%s", log)
		}
		if now, want := mib(log[exp[2]:exp[3]]), mib(log[exp[8]:exp[9]]); !(now > 0) || want < now {
			t.Fatalf("expected %g MiB with %g MiB resident: want at least what is resident", want, now)
		}
	}
}

// TestCheckActivations: activations that exceed the memory available are refused, naming
// the keys that lower them; unknown availability refuses nothing.
func TestCheckActivations(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		n      int
		act    float64
		have   int64
		refuse bool
	}{
		{2, 0.5 * gib, 4 * gib, false},
		{10, 0.5 * gib, 4 * gib, true},
		{10, 0.5 * gib, 0, false},
		{1, 0, 1, false},
	} {
		cfg := config.Default()
		err := checkActivations(cfg, c.n, c.act, c.have, "this machine")
		if (err != nil) != c.refuse || err != nil && !(strings.Contains(err.Error(), "train.workers") && strings.Contains(err.Error(), "train.stack")) {
			t.Errorf("%d clients of %g bytes, %d available: error %v, want refused %v naming train.workers and train.stack", c.n, c.act, c.have, err, c.refuse)
		}
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
