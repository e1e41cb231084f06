// Package defaults fills the zero-valued fields of the engine's typed configs, whose
// documented rule is "the zero value means the default".
package defaults

// Set sets *field to v when *field holds its type's zero value.
func Set[T comparable](field *T, v T) {
	var zero T
	if *field == zero {
		*field = v
	}
}

// Value is *p, or T's zero value when p is nil: an optional config key left unset (a nil
// pointer) reads as zero, which the engine's typed configs take as the default (the
// preset's, the algorithm's own).
func Value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
