package rundir

import (
	"encoding/json"
	"reflect"

	"pfl/engine/internal/jsonfloat"
)

// summaryFields is Summary without its JSON methods.
type summaryFields Summary

// summaryJSON is the type of Summary as summary.json holds it: the same keys in the same
// order, every float64 (in its fields and lists, and in its sections) a jsonfloat.Float,
// which JSON can hold whatever its value (an accuracy over no samples is NaN). It is made
// from Summary itself, so that the two cannot drift apart.
var summaryJSON = floatsAsJSON(reflect.TypeFor[summaryFields]())

// floatsAsJSON is t with every float64 in it a jsonfloat.Float.
func floatsAsJSON(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Float64:
		return reflect.TypeFor[jsonfloat.Float]()
	case reflect.Slice:
		return reflect.SliceOf(floatsAsJSON(t.Elem()))
	case reflect.Struct:
		fields := make([]reflect.StructField, t.NumField())
		for i := range fields {
			f := t.Field(i)
			fields[i] = reflect.StructField{Name: f.Name, Type: floatsAsJSON(f.Type), Tag: f.Tag}
		}
		return reflect.StructOf(fields)
	}
	return t
}

// convert copies src into dst, field by field and item by item, where one of the two is
// the other's type with jsonfloat.Floats for float64s (floatsAsJSON).
func convert(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Float64:
		dst.SetFloat(src.Float())
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := 0; i < src.Len(); i++ {
			convert(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < src.NumField(); i++ {
			convert(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

// MarshalJSON writes the summary; non-finite values become "NaN", "+Inf" or "-Inf".
func (s Summary) MarshalJSON() ([]byte, error) {
	j := reflect.New(summaryJSON).Elem()
	convert(j, reflect.ValueOf(summaryFields(s)))
	return json.Marshal(j.Interface())
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	j := reflect.New(summaryJSON)
	if err := json.Unmarshal(b, j.Interface()); err != nil {
		return err
	}
	var f summaryFields
	convert(reflect.ValueOf(&f).Elem(), j.Elem())
	*s = Summary(f)
	return nil
}
