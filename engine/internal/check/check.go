// Package check validates config values, naming the key and what it accepts: the
// algorithms' settings (engine/fl) and the rest of a config (engine/experiment) report
// their errors the same way, "key: value, want ...".
package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Inf is +∞, the open upper end of a range.
var Inf = math.Inf(1)

// Checker collects the first invalid value, naming its key.
type Checker struct{ err error }

// Err is the first failure, or nil.
func (k *Checker) Err() error { return k.err }

// Fail records a failure of key unless one is recorded already.
func (k *Checker) Fail(key, format string, args ...any) {
	if k.err == nil {
		k.err = fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
	}
}

// Add records err, already naming its key, unless a failure is recorded already.
func (k *Checker) Add(err error) {
	if k.err == nil {
		k.err = err
	}
}

// AtLeast requires v >= lo.
func (k *Checker) AtLeast(key string, v, lo int64) {
	if v < lo {
		k.Fail(key, "%d, want >= %d", v, lo)
	}
}

// Positive requires v >= 1 for an optional key that is set; unset, the key is what
// otherwise names ("the preset's"), which a 0 would silently mean too.
func (k *Checker) Positive(key string, v int64, otherwise string) {
	if v < 1 {
		k.Fail(key, "%d, want >= 1 (or leave it unset, null, for %s)", v, otherwise)
	}
}

// Real requires a finite v in the interval from lo to hi (hi = +Inf for none); bounds
// says which ends are closed, as written: "[]", "(]", "[)" or "()".
func (k *Checker) Real(key string, v, lo, hi float64, bounds string) {
	openLo, openHi := bounds[0] == '(', bounds[1] == ')' || math.IsInf(hi, 1)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		k.Fail(key, "%g is not a finite number", v)
	case v < lo, openLo && v == lo, v > hi, openHi && v == hi:
		ub := fmt.Sprintf("%g%c", hi, bounds[1])
		if math.IsInf(hi, 1) {
			ub = "∞)"
		}
		k.Fail(key, "%g, want a value in %c%g, %s", v, bounds[0], lo, ub)
	}
}

// OneOf requires v to be one of the choices.
func (k *Checker) OneOf(key, v string, choices ...string) {
	if !slices.Contains(choices, v) {
		k.Fail(key, "%q; choose %s", v, strings.Join(choices, ", "))
	}
}
