package rundir

import (
	"bytes"
	"encoding/json"
	"testing"

	"pfl/engine/fl"
	"pfl/engine/safetensors"
)

// FuzzCheckpoint verifies arbitrary bytes as a checkpoint: a decoded, verified history must
// be one a run could have written (the properties resume and summarize rely on).
func FuzzCheckpoint(f *testing.F) {
	h, _ := json.Marshal(historyRecords([]fl.RoundMetrics{{Round: 0, Clients: []int{1, 2}, TrainLoss: 0.5, Samples: 9,
		Eval: &fl.EvalResult{Correct: []int{1, 2, 3}, Count: []int{2, 2, 4}, Accuracy: []float64{.5, 1, .75}, Loss: []float64{1, 1, 1}}}}))
	ts := []safetensors.Tensor{{Name: "global/w", DType: safetensors.F32, Shape: []int64{2}, Data: make([]byte, 8)}}
	sum, err := dataSum(ts)
	if err != nil {
		f.Fatal(err)
	}
	meta := map[string]string{"format": checkpointFormat, "rounds": "1", "history": string(h),
		"history_sha256": sum256(h), "data_sha256": sum, "config": "{}"}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, meta); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes(), 3)
	f.Add(buf.Bytes()[:40], 3)
	f.Fuzz(func(t *testing.T, b []byte, clients int) {
		if clients < 1 || clients > 1000 {
			return
		}
		file, err := safetensors.Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		history, _, err := verifyCheckpoint(file, clients)
		if err != nil {
			return
		}
		for i, m := range history {
			if m.Round != i {
				t.Fatalf("round %d numbered %d", i, m.Round)
			}
			if m.Eval != nil && len(m.Eval.Accuracy) != clients {
				t.Fatalf("%d accuracies for %d clients", len(m.Eval.Accuracy), clients)
			}
		}
		Summarize("fuzz", history, 200, []int{0})
	})
}

// FuzzMetrics parses arbitrary bytes as metrics.jsonl.
func FuzzMetrics(f *testing.F) {
	line, _ := json.Marshal(RoundLine(fl.RoundMetrics{Round: 0, Clients: []int{0}, TrainLoss: 1,
		Eval: &fl.EvalResult{Accuracy: []float64{0.5}, Micro: 0.5}}))
	f.Add(append(line, '\n'))
	f.Add([]byte(`{"round":0,"train_loss":"NaN"}` + "\n" + `{"round":1}`))
	f.Add([]byte(`{"round":0}{"round":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := ParseMetrics(b)
		if err != nil {
			return
		}
		for i, m := range lines {
			if m.Round != i+1 {
				t.Fatalf("line %d holds round %d", i+1, m.Round)
			}
		}
	})
}
