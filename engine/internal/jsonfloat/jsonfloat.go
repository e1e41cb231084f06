// Package jsonfloat lets JSON files hold every float64, the non-finite ones included.
// JSON numbers cannot be NaN or ±Inf, and encoding/json refuses them, so a run whose loss
// became NaN could otherwise write neither its metrics nor its checkpoint. A Float encodes
// finite values as ordinary JSON numbers and NaN, +Inf and -Inf as the strings "NaN",
// "+Inf" and "-Inf" (the spellings Python's json and NumPy read back with float()).
package jsonfloat

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Float is a float64 that survives a JSON round trip whatever its value.
type Float float64

// MarshalJSON writes a finite value as a number and a non-finite one as a string.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a number or one of the strings MarshalJSON writes.
func (f *Float) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "NaN":
			*f = Float(math.NaN())
		case "+Inf", "Inf", "Infinity":
			*f = Float(math.Inf(1))
		case "-Inf", "-Infinity":
			*f = Float(math.Inf(-1))
		default:
			return fmt.Errorf("jsonfloat: %s is not a number", strconv.Quote(s))
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Slice converts values for encoding.
func Slice(v []float64) []Float {
	if v == nil {
		return nil
	}
	out := make([]Float, len(v))
	for i, x := range v {
		out[i] = Float(x)
	}
	return out
}

// Float64s converts decoded values back.
func Float64s(v []Float) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
