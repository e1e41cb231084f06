package cuda_test

import (
	"testing"

	"pfl/cuda"
)

func TestMLPLearnsTwoGaussians(t *testing.T) {
	m := newMLP(t, 3, 2, 16, 2, cuda.Float32)
	defer m.close()
	s := newScope(t)
	xTrain, yTrain := twoGaussians(s, 10, 512)
	xTest, yTest := twoGaussians(s, 11, 2000)
	step := cuda.NewScope()
	defer step.Close()
	var first, last float64
	for i := 0; i < 300; i++ {
		step.Reset()
		last = m.sgdStep(step, xTrain, yTrain, 0.5)
		if i == 0 {
			first = last
		}
	}
	if err := step.Err(); err != nil {
		t.Fatal(err)
	}
	s.SetGradEnabled(false)
	pred := s.Argmax(m.forward(s, xTest), 1, false)
	acc := values(t, s, s.Mean(s.To(s.Eq(pred, yTest), cuda.Float32), false))[0]
	t.Logf("loss %.3f -> %.3f, held-out accuracy %.3f", first, last, acc)
	if acc < 0.95 {
		t.Fatalf("held-out accuracy %.3f, want >= 0.95", acc)
	}
}
