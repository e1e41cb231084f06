package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A suite entry is an algorithm name ("fedavg"), or a labelled member with its own keys:
//
//	"<label>: <key>=<value>; <key>=<value>"
//
// e.g. "mlp+head: algorithm.name=partial; algorithm.local_roles=[mlp, head]". The member
// runs in <out>/<suite>/<label> with the suite's config and those keys set. A value is
// JSON (numbers, true/false, quoted strings; null unsets an optional key, as a member of
// another model family unsets the suite's model.heads), a bracketed list of such values or
// plain words, or a plain word; a key the config does not have is an error naming it.
type member struct {
	label string
	sets  [][2]string // key, value as written
}

// parseMember reads one suite entry.
func parseMember(entry string) (member, error) {
	label, rest, labelled := strings.Cut(entry, ":")
	label = strings.TrimSpace(label)
	if !labelled {
		return member{label: label, sets: [][2]string{{"algorithm.name", label}}}, nil
	}
	m := member{label: label}
	for _, kv := range strings.Split(rest, ";") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return m, fmt.Errorf("suite member %q: %q is not key=value", label, strings.TrimSpace(kv))
		}
		m.sets = append(m.sets, [2]string{k, v})
	}
	return m, nil
}

// MemberKeys lists the config keys a suite entry sets: algorithm.name for a bare algorithm
// name, the keys it lists for a labelled member.
func MemberKeys(entry string) ([]string, error) {
	m, err := parseMember(entry)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(m.sets))
	for i, kv := range m.sets {
		keys[i] = kv[0]
	}
	return keys, nil
}

// parseValue reads a member's value: JSON, a bracketed list, or a plain word.
func parseValue(v string) any {
	var out any
	if json.Unmarshal([]byte(v), &out) == nil {
		return out
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		list := []any{}
		for _, item := range strings.Split(v[1:len(v)-1], ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, parseValue(item))
			}
		}
		return list
	}
	return v
}

// apply returns c with the member's keys set, decoded as strictly as a config file: an
// unknown key or a value of the wrong type is an error naming the key.
func (m member) apply(c Config) (Config, error) {
	return setKeys(c, "suite member "+m.label, m.sets)
}

// setKeys returns c with the keys of sets (key, value as written) set, decoded as strictly
// as a config file; what names the source in errors ("suite member mlp+head", "sweep").
func setKeys(c Config, what string, sets [][2]string) (Config, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return c, err
	}
	for _, kv := range sets {
		path := strings.Split(kv[0], ".")
		node := tree
		for i, part := range path {
			if _, ok := node[part]; !ok {
				return c, fmt.Errorf("%s: unknown key %s", what, kv[0])
			}
			if i == len(path)-1 {
				node[part] = parseValue(kv[1])
				break
			}
			next, ok := node[part].(map[string]any)
			if !ok {
				return c, fmt.Errorf("%s: %s is not a section (no key %s)", what, strings.Join(path[:i+1], "."), kv[0])
			}
			node = next
		}
	}
	b, err = json.Marshal(tree)
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out Config
	if err := dec.Decode(&out); err != nil {
		return c, fmt.Errorf("%s: %v", what, err)
	}
	return out, nil
}
