package config

import (
	"reflect"
	"testing"
)

// TestParseText: the one grammar of a value written as text (--set, PFL_* variables,
// suite members, sweep values). A quoted list item is one item without its quotes,
// whatever commas, brackets or semicolons it holds; a list nests; a value that is not a
// list is the text inside its quotes, or as written, trimmed.
func TestParseText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any
	}{
		{`[fedtp, fedavg]`, []any{"fedtp", "fedavg"}},
		{`[fedtp, "p: algorithm.name=fedperfix; model.prefix.mid=32"]`, []any{"fedtp", "p: algorithm.name=fedperfix; model.prefix.mid=32"}},
		{`['t: algorithm.name=transfed; algorithm.generate=[focal_f, focal_h]', fedavg]`, []any{"t: algorithm.name=transfed; algorithm.generate=[focal_f, focal_h]", "fedavg"}},
		{`[a, , b,]`, []any{"a", "b"}},
		{`[]`, []any{}},
		{`["a,b"]`, []any{"a,b"}},
		{`[[mlp, head], [head]]`, []any{[]any{"mlp", "head"}, []any{"head"}}},
		{`"x"`, "x"},
		{` 0.5 `, "0.5"},
		{`null`, "null"},
		{`"a, b"`, "a, b"},
	} {
		if got := parseText(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseText(%s) = %#v, want %#v", c.in, got, c.want)
		}
	}
}
