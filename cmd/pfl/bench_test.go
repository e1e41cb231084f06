package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchUsage(t *testing.T) {
	cases := []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"bench"}, 2, "name a workload"},
		{[]string{"bench", "nope"}, 2, `unknown workload "nope"`},
		{[]string{"bench", "nope"}, 2, "fedperfix-vits"}, // the list follows
		{[]string{"bench", "-measure"}, 2, "flag needs an argument"},
		{[]string{"bench", "-measure", "x", "fedtp-c100-50"}, 2, "invalid value"},
		{[]string{"bench", "-size", "huge", "fedtp-c100-50"}, 1, "want small, full or auto"},
		{[]string{"bench", "-device", "gpu", "fedtp-c100-50"}, 1, "want cpu, cuda or cuda:N"},
		{[]string{"bench", "fedtp-c100-50", "-per-round", "9"}, 1, "9 clients per round of 4"},
		{[]string{"bench", "fedtp-c100-50", "-measure", "0"}, 1, "timed rounds"},
		{[]string{"bench", "-json", "/nonexistent/dir/x.json", "fedtp-c100-50"}, 1, "no such file"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		text := out.String() + errOut.String()
		if code != c.code || !strings.Contains(text, c.mention) {
			t.Errorf("pfl %v: exit %d, output %q; want exit %d mentioning %q", c.args, code, text, c.code, c.mention)
		}
	}
}

// TestBenchSmall runs the first FedTP workload, shrunk, on the CPU end to end (flags after
// the name) and checks the table's columns and the JSON report.
func TestBenchSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.json")
	var out, errOut bytes.Buffer
	code := run([]string{"bench", "fedtp-c100-50", "-measure", "2", "-json", path}, &out, &errOut)
	text := out.String()
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, text, errOut.String())
	}
	for _, col := range []string{"workload", "device", "size", "model", "K/N", "samples/s", "TFLOP/s", "MFU fp32", "MFU bf16",
		"data", "train", "server", "generate", "aggregate", "other", "round", "eval (one)", "checkpoint (one)",
		"per round of the full run", "peak mem", "projected"} {
		if !strings.Contains(text, col) {
			t.Errorf("table has no %q column:\n%s", col, text)
		}
	}
	var rows []string // the workload's row in each table: throughput, then the split
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "fedtp-c100-50 ") && !strings.Contains(l, " on cpu") { // not the heading
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows of fedtp-c100-50, want 2 (throughput, split):\n%s", len(rows), text)
	}
	row := rows[0]
	for _, cell := range []string{"cpu", "small", "tiny-vit@32", "2/4", "n/a", "(1500 rounds, 300 evals, 150 saves)"} {
		if !strings.Contains(row, cell) {
			t.Errorf("row %q has no %q", row, cell)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reports []struct {
		Workload       string  `json:"workload"`
		MeasuredRounds int     `json:"measured_rounds"`
		Samples        int     `json:"samples"`
		TrainTFLOPS    float64 `json:"train_tflops"`
		ProjectedS     float64 `json:"projected_s"`
	}
	if err := json.Unmarshal(b, &reports); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].MeasuredRounds != 2 || reports[0].Samples != 2*2*16 || !(reports[0].TrainTFLOPS > 0) || !(reports[0].ProjectedS > 0) {
		t.Errorf("JSON reports %+v: want one with 2 timed rounds of 2 clients × 16 samples and positive rates", reports)
	}
}
