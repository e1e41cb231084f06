package experiment

import (
	"reflect"

	"pfl/cuda"
)

// filled returns c with every field it leaves at its zero value taken from DefaultConfig,
// so a test can write only the keys it cares about as a literal. (Run itself never does
// this: a zero it is given is a value.)
func filled(c Config) Config {
	d := DefaultConfig()
	fill(reflect.ValueOf(&c).Elem(), reflect.ValueOf(d))
	return c
}

func fill(dst, def reflect.Value) {
	for i := 0; i < dst.NumField(); i++ {
		f, g := dst.Field(i), def.Field(i)
		if !f.CanSet() {
			continue // the algorithm's own sections: a section not set is at its default
		}
		if f.Kind() == reflect.Struct {
			fill(f, g)
			continue
		}
		if f.IsZero() {
			f.Set(g)
		}
	}
}

func ptr[T any](v T) *T { return &v }

var cudaCPU = cuda.CPU
