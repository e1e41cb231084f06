package fl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Section is an algorithm's own settings, the config's algorithm.<key> section: a struct
// in the algorithm's file whose fields carry mapstructure and json tags (the keys) and a
// doc comment each (docs/config.md), whose value in the registry line (OwnSection.Default)
// holds its defaults, and whose Validate names the key it refuses. An algorithm with a
// section of its own is its file and its registry line: Settings decodes, defaults,
// validates, writes and documents the section from the registry alone.
type Section interface {
	Validate() error
}

// FollowsLR is a Section with a key that follows the run's learning rate (train.lr) unless
// set, as pFedMe's personal_lr: WithLR fills it in.
type FollowsLR interface {
	Section
	WithLR(lr float64) Section
}

// OwnSection is an algorithm's own section (Algorithm.Own): its key under algorithm and
// its value at the defaults. Algorithms that share a section (pfedgp and pfedgp-ip) give
// the same key and type.
type OwnSection struct {
	Key     string
	Default Section
}

// OwnKeys are the keys of the registry's own sections, each once, in the registry's order.
func OwnKeys() []string {
	var keys []string
	for _, a := range registry {
		if a.Own.Key != "" && !slices.Contains(keys, a.Own.Key) {
			keys = append(keys, a.Own.Key)
		}
	}
	return keys
}

// OwnDefault is the own section key at its defaults, as the registry gives it; false for
// a key no algorithm owns.
func OwnDefault(key string) (Section, bool) {
	for _, a := range registry {
		if a.Own.Key == key {
			return a.Own.Default, true
		}
	}
	return nil, false
}

// Section is the own section key as the settings give it: the value a config set, else the
// registry's default; nil for a key no algorithm owns.
func (s Settings) Section(key string) Section {
	if v, ok := s.own[key]; ok {
		return v
	}
	v, _ := OwnDefault(key)
	return v
}

// SetSection sets the own section key to v, which must have the type of the registry's
// default. Settings are values: the sections are copied on write, so that a copy of s
// (a suite member's config) keeps its own.
func (s *Settings) SetSection(key string, v Section) error {
	def, ok := OwnDefault(key)
	switch {
	case !ok:
		return fmt.Errorf("algorithm.%s: no algorithm has a section %s (algorithm sections: %s)", key, key, strings.Join(OwnKeys(), ", "))
	case reflect.TypeOf(v) != reflect.TypeOf(def):
		return fmt.Errorf("algorithm.%s: a %T, want a %T", key, v, def)
	}
	own := make(map[string]Section, len(s.own)+1)
	for k, x := range s.own {
		own[k] = x
	}
	own[key] = v
	s.own = own
	return nil
}

// ownKeyOf is the key of the own section of type T.
func ownKeyOf[T Section]() string {
	for _, k := range OwnKeys() {
		def, _ := OwnDefault(k)
		if _, ok := def.(T); ok {
			return k
		}
	}
	panic(fmt.Sprintf("fl: no algorithm owns a section of type %T", *new(T)))
}

// Own is the settings' own section of type T (a config's value, else the default).
func Own[T Section](s Settings) T {
	return s.Section(ownKeyOf[T]()).(T)
}

// EditOwn changes the own section of type T in s with edit (for programs and tests that
// build a config in code).
func EditOwn[T Section](s *Settings, edit func(*T)) {
	key := ownKeyOf[T]()
	v := s.Section(key).(T)
	edit(&v)
	if err := s.SetSection(key, v); err != nil {
		panic(err) // the key was found by the type
	}
}

// settingsFields are Settings' own fields, as JSON writes them (the sections apart).
type settingsFields Settings

// MarshalJSON writes the settings as config.json's algorithm section: the keys several
// algorithms share, then every own section of the registry, in its order (defaults
// included, so that config.json says every value the run used).
func (s Settings) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(settingsFields(s))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(b[:len(b)-1]) // up to the closing brace
	for _, k := range OwnKeys() {
		v, err := json.Marshal(s.Section(k))
		if err != nil {
			return nil, fmt.Errorf("algorithm.%s: %w", k, err)
		}
		fmt.Fprintf(&out, ",%q:%s", k, v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// UnmarshalJSON reads an algorithm section as MarshalJSON writes it, strictly: an unknown
// key, in the section or in an own section, is an error naming it. Keys it does not give
// keep their values in s.
func (s *Settings) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	shared := map[string]json.RawMessage{}
	var keys []string
	for k, v := range raw {
		if _, own := OwnDefault(k); own {
			keys = append(keys, k)
			continue
		}
		shared[k] = v
	}
	sb, err := json.Marshal(shared)
	if err != nil {
		return err
	}
	fields := settingsFields(*s)
	if err := strictJSON(sb, &fields); err != nil {
		return fmt.Errorf("algorithm: %w", err)
	}
	own := s.own
	*s = Settings(fields)
	s.own = own
	sort.Strings(keys)
	for _, k := range keys {
		cur := reflect.New(reflect.TypeOf(s.Section(k)))
		cur.Elem().Set(reflect.ValueOf(s.Section(k)))
		if err := strictJSON(raw[k], cur.Interface()); err != nil {
			return fmt.Errorf("algorithm.%s: %w", k, err)
		}
		if err := s.SetSection(k, cur.Elem().Interface().(Section)); err != nil {
			return err
		}
	}
	return nil
}

// strictJSON decodes b into v, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
