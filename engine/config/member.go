package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// A Member is a suite entry: an algorithm name ("fedavg"), or a labelled member with its
// own keys:
//
//	"<label>: <key>=<value>; <key>=<value>"
//
// e.g. "mlp+head: algorithm.name=partial; algorithm.local_roles=[mlp, head]". The member
// runs in <out>/<suite>/<label> with the suite's config and those keys set. A value is
// written as --set writes one (parseText: a bracketed list, a quoted text, or a word that
// the key's type reads; null unsets an optional key, as a member of another model family
// unsets the suite's model.heads); a key the config does not have is an error naming it.
type Member struct {
	Label string
	Sets  [][2]string // key, value as written
}

// ParseMember reads one suite entry.
func ParseMember(entry string) (Member, error) {
	label, rest, labelled := strings.Cut(entry, ":")
	label = strings.TrimSpace(label)
	if !labelled {
		return Member{Label: label, Sets: [][2]string{{"algorithm.name", label}}}, nil
	}
	m := Member{Label: label}
	for _, kv := range splitOutside(rest, ';') {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return m, fmt.Errorf("suite member %q: %q is not key=value", label, strings.TrimSpace(kv))
		}
		m.Sets = append(m.Sets, [2]string{k, v})
	}
	return m, nil
}

// bare reports whether the member is a bare algorithm name (its label is its algorithm).
func (m Member) bare() bool {
	return len(m.Sets) == 1 && m.Sets[0][0] == "algorithm.name" && m.Sets[0][1] == m.Label
}

// MemberKeys lists the config keys a suite entry sets: algorithm.name for a bare algorithm
// name, the keys it lists for a labelled member.
func MemberKeys(entry string) ([]string, error) {
	m, err := ParseMember(entry)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(m.Sets))
	for i, kv := range m.Sets {
		keys[i] = kv[0]
	}
	return keys, nil
}

// MemberLabels are the suite entries' labels (the part before ":").
func MemberLabels(suite []string) []string {
	out := make([]string, len(suite))
	for i, e := range suite {
		label, _, _ := strings.Cut(e, ":")
		out[i] = strings.TrimSpace(label)
	}
	return out
}

// Apply returns c with the member's keys set, read as strictly as --set reads them: an
// unknown key or a value of the wrong type is an error naming the key.
func (m Member) Apply(c Config) (Config, error) {
	return c.With("suite member "+m.Label, m.Sets)
}

// With returns c with the keys of sets (key, value as written) set, read as strictly as
// --set reads them; what names the source in errors ("suite member mlp+head", "sweep
// point data.alpha=0.1").
func (c Config) With(what string, sets [][2]string) (Config, error) {
	for _, kv := range sets {
		if !IsKey(kv[0]) && isSection(kv[0]) {
			return c, fmt.Errorf("%s: %s is a section, not a key (its keys: %s)", what, kv[0], strings.Join(keysUnder(kv[0]), ", "))
		}
		if err := c.setText(kv[0], kv[1]); err != nil {
			return c, fmt.Errorf("%s: %w", what, err)
		}
	}
	return c, nil
}

// Members returns the config of every member of c's suite, each as a suite runs it: the
// suite's config with the member's keys, in <out>/<name>/<label> (Name is the label),
// resolved and validated. Seeds and a sweep are the grid's and are refused here.
func Members(c Config) ([]Config, error) {
	c = c.Resolved()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(c.Suite) == 0 {
		return nil, fmt.Errorf("suite: no algorithms listed")
	}
	if c.IsGrid() {
		return nil, fmt.Errorf("seeds, sweep: a suite with seeds or a sweep runs as a grid")
	}
	var out []Config
	for _, entry := range c.Suite {
		mem, err := ParseMember(entry)
		if err != nil {
			return nil, err
		}
		m := c
		m.Suite, m.SuiteTable = nil, ""
		if m, err = mem.Apply(m); err != nil {
			return nil, err
		}
		m.Out, m.Name = filepath.Join(c.Out, c.Name), mem.Label
		m = m.Resolved()
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("suite member %s: %w", mem.Label, err)
		}
		out = append(out, m)
	}
	return out, nil
}
