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
