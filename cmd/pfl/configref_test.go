package main

import (
	"bytes"
	"encoding"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"pfl/engine/config"
)

// configDocPath is the config reference generated from the config structs.
const configDocPath = "../../docs/config.md"

// TestConfigReferenceIsCurrent: docs/config.md lists every config key with its type,
// default and meaning, generated from the structs (their fields' comments) and
// config.Default. PFL_TEST_UPDATE_DOCS=1 go test ./cmd/pfl -run ConfigReference
// rewrites it after a change.
func TestConfigReferenceIsCurrent(t *testing.T) {
	want, err := configReference()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PFL_TEST_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(configDocPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is not what the config structs generate; run PFL_TEST_UPDATE_DOCS=1 go test ./cmd/pfl -run ConfigReference", configDocPath)
	}
}

// configReference renders docs/config.md: one table per section, one row per key.
func configReference() ([]byte, error) {
	docs := fieldDocs{}
	var b bytes.Buffer
	b.WriteString(`# Config reference

Every key of an experiment config (YAML, ` + "`--set section.key=value`" + `, or the variable
` + "`PFL_SECTION_KEY`" + `), generated from the config structs by the test
` + "`TestConfigReferenceIsCurrent`" + ` (cmd/pfl): the type, the default, and the field's own
documentation. An optional key is unset (` + "`null`" + `) by default and then follows what its
text says. ` + "`pfl train --print-config`" + ` prints a config's every key with its value and source.

Each algorithm reads ` + "`algorithm.name`" + `, its own section (` + "`algorithm.pfedme.*`" + ` for pfedme) and
the shared keys its ` + "`pfl algorithms NAME`" + ` lists; the rest of the ` + "`algorithm`" + ` section are other
algorithms' keys, which it ignores. One rule decides when such a key is an error: a key given
for runs none of which reads it is refused, naming the key. A config file's ` + "`algorithm`" + `
section is given for every run the file may make — a suite's members share it, and a file
may be run with ` + "`--set algorithm.name=...`" + ` — so it may hold several algorithms' keys; a
key given by ` + "`--set`" + ` or a ` + "`PFL_*`" + ` variable is given for the runs being started, and one that
a suite member's entry or a sweep sets for the run it makes, and each must be read there
(` + "`--set algorithm.pfedme.lambda=3`" + ` with fedper is refused, as is
` + "`--set algorithm.local_clients=sampled`" + `).
`)
	def := config.Default()
	section := "-"
	for _, f := range config.Fields() {
		key := f.Key
		sec := ""
		if i := strings.LastIndex(key, "."); i >= 0 {
			sec = key[:i]
		}
		if sec != section {
			section = sec
			title := "Top level"
			if sec != "" {
				title = "`" + sec + "`"
			}
			fmt.Fprintf(&b, "\n## %s\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n", title)
		}
		text, err := docs.of(f.Owner, f.Name)
		if err != nil {
			return nil, err
		}
		value, err := def.ValueJSON(key)
		if err != nil {
			return nil, err
		}
		if value == "null" || value == `""` {
			value = "unset"
		} else {
			value = "`" + value + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", key, typeName(f.Type), value, strings.ReplaceAll(text, "|", "\\|"))
	}
	b.WriteString("\n## `sweep`\n\nA mapping from dotted keys to lists of values, in the order written (the first key is the plots' x axis): " +
		"the experiment runs once per combination. See `Config.Sweep` in engine/config.\n")
	return b.Bytes(), nil
}

// typeName is a field's type as a config writer sees it.
func typeName(t reflect.Type) string {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return "string" // read from its text (the device)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem()) + " or null"
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return t.String()
}

// fieldDocs reads struct fields' comments from the Go source of their packages.
type fieldDocs map[string]map[string]string // "pkgpath.Type" → field → text

// of is the comment of field name of struct owner: its doc comment, else its line
// comment, else (a field documented together with the one before, "A and B keep …") the
// text of the field before it.
func (d fieldDocs) of(owner reflect.Type, name string) (string, error) {
	id := owner.PkgPath() + "." + owner.Name()
	if _, ok := d[id]; !ok {
		if err := d.load(owner.PkgPath()); err != nil {
			return "", err
		}
	}
	text, ok := d[id][name]
	if !ok {
		return "", fmt.Errorf("no source for field %s of %s", name, id)
	}
	return text, nil
}

// load parses the package at pkgPath and records the comments of its structs' fields.
func (d fieldDocs) load(pkgPath string) error {
	p, err := build.Default.Import(pkgPath, ".", build.FindOnly)
	if err != nil {
		return err
	}
	pkgs, err := parser.ParseDir(token.NewFileSet(), p.Dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, pkg := range pkgs {
		ast.Inspect(pkg, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			fields := map[string]string{}
			prev := ""
			for _, f := range st.Fields.List {
				text := ""
				switch {
				case f.Doc != nil:
					text = f.Doc.Text()
				case f.Comment != nil:
					text = f.Comment.Text()
				default:
					text = prev
				}
				text = strings.Join(strings.Fields(text), " ")
				for _, n := range f.Names {
					fields[n.Name] = text
				}
				prev = text
			}
			d[pkgPath+"."+ts.Name.Name] = fields
			return true
		})
	}
	return nil
}
