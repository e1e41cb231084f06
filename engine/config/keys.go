package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"pfl/engine/fl"
	"pfl/internal/suggest"
)

// A Field is one key of Config: its dotted name (data.clients, algorithm.pfedme.lamda),
// the struct type that declares it and the field, whose json tag names it and whose doc
// comment (in the declaring type's source) documents it.
type Field struct {
	Key   string
	Owner reflect.Type
	reflect.StructField
}

// Fields lists every key of Config in declaration order (the algorithms' own sections
// after the algorithm section's fields, in the registry's order). The sweep block is no
// key of its own: its keys are other keys.
func Fields() []Field {
	var out []Field
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := keyName(f)
			if name == "" || f.Type == reflect.TypeFor[[]SweepAxis]() {
				continue // unexported, or the sweep block (its keys are other keys)
			}
			if f.Type.Kind() == reflect.Struct && !readsText(f.Type) {
				walk(prefix+name+".", f.Type)
				continue
			}
			out = append(out, Field{Key: prefix + name, Owner: t, StructField: f})
		}
		if t == reflect.TypeFor[fl.Settings]() { // the algorithms' own sections, from the registry
			for _, k := range fl.OwnKeys() {
				def, _ := fl.OwnDefault(k)
				walk(prefix+k+".", reflect.TypeOf(def))
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return out
}

// keyName is a field's key: its name in config.json (its json tag), the one spelling of
// a key in every source; "" for a field that is none.
func keyName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// Keys lists every key of Config, as Fields orders them.
func Keys() []string {
	var keys []string
	for _, f := range Fields() {
		keys = append(keys, f.Key)
	}
	return keys
}

// keyTypes maps every key to its field's type (the registry is complete before any config
// is read: its lines are package variables).
var keyTypes = sync.OnceValue(func() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range Fields() {
		out[f.Key] = f.Type
	}
	return out
})

// IsKey reports whether key is a key of Config.
func IsKey(key string) bool {
	_, ok := keyTypes()[key]
	return ok
}

// isSection reports whether key is a section: some key lies under it.
func isSection(key string) bool {
	for k := range keyTypes() {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// unknownKey is the problem with a key Config does not have, with the keys closest to it.
func unknownKey(key string) string {
	return "no config key " + key + suggest.DidYouMean(key, Keys())
}

// ValueJSON is the JSON of c's value at key.
func (c Config) ValueJSON(key string) (string, error) {
	v, ok := field(reflect.ValueOf(c), key)
	if !ok {
		return "", fmt.Errorf("config has no key %s", key)
	}
	b, err := json.Marshal(v.Interface())
	return string(b), err
}

// field is the field of the config value v (a Config) at key, found by the fields' tags;
// in an algorithm's own section, a copy of the field (the sections are values:
// fl.Settings.SetSection writes them).
func field(v reflect.Value, key string) (reflect.Value, bool) {
	for _, part := range strings.Split(key, ".") {
		if s, ok := v.Interface().(fl.Settings); ok {
			if _, isOwn := fl.OwnDefault(part); isOwn {
				v = reflect.ValueOf(s.Section(part))
				continue
			}
		}
		if v.Kind() != reflect.Struct || readsText(v.Type()) {
			return v, false
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if keyName(v.Type().Field(i)) == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return v, false
		}
	}
	return v, true
}

// set sets c's key to x, a value typedValue made for the key's type (nil: an optional key
// unset, or, for any other key, its value kept).
func (c *Config) set(key string, x any) error {
	if sec, rest, ok := ownKey(key); ok {
		cur := reflect.New(reflect.TypeOf(c.Algorithm.Section(sec)))
		cur.Elem().Set(reflect.ValueOf(c.Algorithm.Section(sec)))
		f, found := field(cur.Elem(), rest)
		if !found {
			return fmt.Errorf("%s", unknownKey(key))
		}
		assign(f, x)
		return c.Algorithm.SetSection(sec, cur.Elem().Interface().(fl.Section))
	}
	f, found := field(reflect.ValueOf(c).Elem(), key)
	if !found {
		return fmt.Errorf("%s", unknownKey(key))
	}
	assign(f, x)
	return nil
}

// assign stores x (typedValue's) in the settable field f.
func assign(f reflect.Value, x any) {
	switch {
	case x == nil && (f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice):
		f.SetZero()
	case x == nil:
		// a key a run's config.json leaves unset keeps its value
	case f.Kind() == reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		assign(p.Elem(), x)
		f.Set(p)
	case f.Kind() == reflect.Slice:
		items := x.([]any)
		s := reflect.MakeSlice(f.Type(), len(items), len(items))
		for i, it := range items {
			assign(s.Index(i), it)
		}
		f.Set(s)
	default:
		f.Set(reflect.ValueOf(x).Convert(f.Type()))
	}
}

// ownKey splits a key of an algorithm's own section (algorithm.pfedme.lambda) into the
// section (pfedme) and the key in it (lambda).
func ownKey(key string) (section, rest string, ok bool) {
	after, isAlg := strings.CutPrefix(key, "algorithm.")
	section, rest, dotted := strings.Cut(after, ".")
	if _, isOwn := fl.OwnDefault(section); !isAlg || !dotted || !isOwn {
		return "", "", false
	}
	return section, rest, true
}

// setText sets key to a value written as text (parseText's grammar), strictly: an unknown
// key, no value, or a value the key's type cannot take is an error naming the key.
func (c *Config) setText(key, text string) error {
	t, ok := keyTypes()[key]
	if !ok {
		return fmt.Errorf("%s", unknownKey(key))
	}
	x, problem := typedValue(t, parseText(text), true)
	if problem != "" {
		return fmt.Errorf("%s: %s", key, problem)
	}
	return c.set(key, x)
}

// Flatten maps a config onto its dotted keys (data.clients, …) and JSON values, as
// config.json writes them (the sweep a list under "sweep").
func Flatten(cfg Config) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			} else {
				out[prefix+k] = v
			}
		}
	}
	walk("", tree)
	return out, nil
}

// keysUnder lists the keys of section, for messages.
func keysUnder(section string) []string {
	var out []string
	for _, k := range Keys() {
		if strings.HasPrefix(k, section+".") {
			out = append(out, k)
		}
	}
	return slices.Clip(out)
}
