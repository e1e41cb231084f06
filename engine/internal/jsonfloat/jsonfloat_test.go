package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, v := range []float64{0, -0.5, 1e300, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		b, err := json.Marshal(struct{ X Float }{Float(v)})
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		var got struct{ X Float }
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		g := float64(got.X)
		if !(g == v || (math.IsNaN(g) && math.IsNaN(v))) {
			t.Fatalf("%v came back as %v (%s)", v, g, b)
		}
	}
}

func TestRefusesOtherStrings(t *testing.T) {
	var f Float
	for _, in := range []string{`"nan?"`, `"1.5"`, `true`, `[1]`} {
		if err := json.Unmarshal([]byte(in), &f); err == nil {
			t.Fatalf("%s accepted", in)
		}
	}
}
