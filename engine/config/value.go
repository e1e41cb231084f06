package config

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// parseText reads a value written as text — a --set or PFL_* value, a suite member's value,
// a sweep's value — as YAML's flow style reads it: "[a, b]" is a list (split at the commas
// outside quotes and brackets, each item read the same way, empty items dropped), a value
// in matching quotes is the text inside them (which may hold commas, brackets and
// semicolons of its own), and anything else is the text as written, trimmed, which the
// key's type then reads (typedValue: "3" for a count, "null" for an optional key). This is
// the one grammar of values written as text.
func parseText(val string) any {
	val = strings.TrimSpace(val)
	inner, ok := strings.CutPrefix(val, "[")
	if inner, ok2 := strings.CutSuffix(inner, "]"); ok && ok2 {
		items := []any{}
		for _, it := range splitOutside(inner, ',') {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, parseText(it))
			}
		}
		return items
	}
	return unquote(val)
}

// splitOutside splits s at each sep outside quotes and brackets: a list's inside at its
// commas, a suite member's settings at their semicolons.
func splitOutside(s string, sep rune) []string {
	var items []string
	var quote rune
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == sep && depth == 0:
			items = append(items, s[start:i])
			start = i + 1
		}
	}
	return append(items, s[start:])
}

// unquote strips one pair of matching quotes around a value.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// valueText writes a value as it is written as text (parseText reads it back): a number or
// word as such, a list as [a, b], anything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var items []string
		for _, it := range x {
			items = append(items, valueText(it))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case float64, float32, int, int64, uint64, bool, json.Number:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// noValue is typedValue's problem with a key given no value.
const noValue = "no value"

// textType is the interface of a key whose type reads itself from text (the device).
var textType = reflect.TypeFor[encoding.TextUnmarshaler]()

// readsText reports whether a field of type t reads its value from text (UnmarshalText):
// such a struct is one key, not a section.
func readsText(t reflect.Type) bool { return reflect.PointerTo(t).Implements(textType) }

// typedValue converts raw, a value as a source gives it (YAML's and JSON's strings,
// numbers, booleans, lists and nulls; parseText's strings and lists), to a value of the
// key's type t, or says in plain words what keeps it from being one ("3.7 is not a whole
// number", "-2 is negative"). An optional key (a pointer: the model sizes,
// algorithm.hyper.lr) takes null, which leaves it unset (nil is returned). Strict, any
// other key given no value (YAML's "rounds:", --set train.rounds=, an empty variable) is
// an error: it would read as 0, false or "", a value nobody wrote. Not strict (a run's
// config.json, which writes "" and null for keys left unset), such a key keeps its value
// (nil is returned).
func typedValue(t reflect.Type, raw any, strict bool) (any, string) {
	if t.Kind() == reflect.Pointer && (raw == nil || raw == "null") {
		return nil, "" // an optional key (model.depth) unset: the preset's or algorithm's
	}
	if s, isString := raw.(string); raw == nil || (isString && s == "") {
		switch {
		case strict:
			return nil, noValue
		case raw != nil && t.Kind() == reflect.String:
			return "", ""
		}
		return nil, ""
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		return typedList(t, raw, strict)
	}
	text := valueText(raw)
	switch raw.(type) {
	case []any, map[string]any:
		return nil, fmt.Sprintf("%s is a list or section; want one value", text)
	}
	if readsText(t) {
		v := reflect.New(t)
		if err := v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return nil, err.Error()
		}
		return v.Elem().Interface(), ""
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return wholeNumber(raw, text)
	case reflect.Uint64:
		return naturalNumber(raw, text)
	case reflect.Float64:
		f, ok := number(raw)
		if !ok {
			return nil, text + " is not a number"
		}
		return f, ""
	case reflect.Bool:
		switch b := raw.(type) {
		case bool:
			return b, ""
		case string:
			if v, err := strconv.ParseBool(b); err == nil {
				return v, ""
			}
		}
		return nil, text + " is not true or false"
	case reflect.String:
		return text, ""
	}
	return nil, fmt.Sprintf("a value of type %s, which this reader does not convert", t)
}

// typedList converts raw to a list of t's elements: a list, or one value for a list
// (suite: fedavg). An empty list stays a list (algorithm.local_roles: []), not unset.
func typedList(t reflect.Type, raw any, strict bool) (any, string) {
	items, ok := raw.([]any)
	if !ok {
		items = []any{raw}
	}
	out := []any{}
	for _, it := range items {
		x, problem := typedValue(t.Elem(), it, strict)
		if problem != "" {
			return nil, problem
		}
		out = append(out, x)
	}
	return out, ""
}

// wholeNumber reads raw as an int64: exactly from an integer or its text (beyond float64's
// 2^53), else from a real number that is whole.
func wholeNumber(raw any, text string) (any, string) {
	switch n := raw.(type) {
	case int:
		return int64(n), ""
	case int64:
		return n, ""
	case string:
		if v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil {
			return v, ""
		}
	case json.Number:
		if v, err := n.Int64(); err == nil {
			return v, ""
		}
	}
	f, ok := number(raw)
	switch {
	case !ok || f != math.Trunc(f) || math.IsInf(f, 0):
		return nil, text + " is not a whole number"
	case f < math.MinInt64 || f >= math.MaxInt64:
		return nil, text + " is out of range"
	}
	return int64(f), ""
}

// naturalNumber reads raw as a uint64, exactly where it is an integer or its text.
func naturalNumber(raw any, text string) (any, string) {
	switch n := raw.(type) {
	case int:
		if n >= 0 {
			return uint64(n), ""
		}
	case uint64:
		return n, ""
	case string, json.Number:
		if v, err := strconv.ParseUint(strings.TrimSpace(fmt.Sprint(n)), 10, 64); err == nil {
			return v, ""
		}
	}
	f, ok := number(raw)
	switch {
	case !ok || f != math.Trunc(f) || math.IsInf(f, 0):
		return nil, text + " is not a whole number"
	case f < 0:
		return nil, text + " is negative; want a whole number >= 0"
	case f >= math.MaxUint64:
		return nil, text + " is out of range"
	}
	return uint64(f), ""
}

// number reads raw as a real number: a YAML or JSON number, or a string that spells one
// (Inf and NaN included: Validate names the key that refuses them).
func number(raw any) (float64, bool) {
	switch x := raw.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		return number(string(x))
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	}
	return 0, false
}
