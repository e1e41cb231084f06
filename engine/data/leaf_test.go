package data

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leafUser is one user's LEAF samples.
type leafUser struct{ x, y []string }

// leafJSON builds a LEAF JSON file of users in order.
func leafJSON(t testing.TB, order []string, users map[string]leafUser) []byte {
	f := map[string]any{"users": order, "num_samples": []int{}, "user_data": map[string]any{}}
	for _, u := range order {
		f["num_samples"] = append(f["num_samples"].([]int), len(users[u].x))
		f["user_data"].(map[string]any)[u] = map[string]any{"x": users[u].x, "y": users[u].y}
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// printableTokens encodes s with Printable indices.
func printableTokens(s string) []int64 {
	var out []int64
	for _, c := range []byte(s) {
		out = append(out, int64(strings.IndexByte(Printable, c)))
	}
	return out
}

func TestLoadLEAF(t *testing.T) {
	dir := t.TempDir()
	train := putFile(t, dir, "train.json", leafJSON(t, []string{"ROMEO", "JULIET", "NURSE"}, map[string]leafUser{
		"ROMEO":  {[]string{"But sof", "t! What"}, []string{"t", " "}},
		"JULIET": {[]string{"O Romeo"}, []string{","}},
		"NURSE":  {[]string{"Anon, a"}, []string{"n"}},
	}))
	test := putFile(t, dir, "test.json", leafJSON(t, []string{"JULIET", "ROMEO", "TYBALT"}, map[string]leafUser{
		"JULIET": {[]string{"Romeo!\n"}, []string{"\t"}},
		"ROMEO":  {[]string{"light t"}, []string{"h"}},
		"TYBALT": {[]string{"Peace!!"}, []string{"!"}},
	}))
	txt, err := LoadLEAF(train, test)
	if err != nil {
		t.Fatal(err)
	}
	if txt.Vocab != Printable || len(txt.Clients) != 2 {
		t.Fatalf("%d clients", len(txt.Clients))
	}
	for i, want := range []struct {
		id          string
		train, test string
	}{{"ROMEO", "But softt! What ", "light th"}, {"JULIET", "O Romeo,", "Romeo!\n\t"}} {
		c := txt.Clients[i]
		if c.ID != want.id || c.Train.Len != 7 || c.Test.Len != 7 ||
			!slices.Equal(c.Train.Tokens, printableTokens(want.train)) || !slices.Equal(c.Test.Tokens, printableTokens(want.test)) {
			t.Errorf("client %d: %s %+v %+v", i, c.ID, c.Train, c.Test)
		}
	}
	if n := txt.Clients[0].Train.N(); n != 2 {
		t.Errorf("ROMEO has %d train sequences", n)
	}
}

func TestLoadLEAFErrors(t *testing.T) {
	ok := leafUser{[]string{"abc"}, []string{"d"}}
	for _, tc := range []struct {
		name string
		user leafUser
		raw  string // used instead of user when set
		err  string
	}{
		{"outside vocabulary", leafUser{[]string{"ab\x01"}, []string{"d"}}, "", `user "A": sample 0: character '\x01'`},
		{"non-ASCII", leafUser{[]string{"abc"}, []string{"é"}}, "", `character 'é'`},
		{"x lengths differ", leafUser{[]string{"abc", "abcd"}, []string{"d", "e"}}, "", "sample 1 has a 4-character x"},
		{"long y", leafUser{[]string{"abc"}, []string{"de"}}, "", "2-character y"},
		{"empty x", leafUser{[]string{""}, []string{"d"}}, "", "0-character x"},
		{"num_samples", ok, `{"users": ["A"], "num_samples": [2], "user_data": {"A": {"x": ["abc"], "y": ["d"]}}}`, "num_samples 2 but 1 x and 1 y"},
		{"missing user_data", ok, `{"users": ["A"], "num_samples": [1], "user_data": {}}`, `user "A" has no user_data`},
		{"num_samples length", ok, `{"users": ["A"], "num_samples": [], "user_data": {}}`, "0 num_samples for 1 users"},
		{"not JSON", ok, `{"users": [`, "not LEAF JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := []byte(tc.raw)
			if tc.raw == "" {
				b = leafJSON(t, []string{"A"}, map[string]leafUser{"A": tc.user})
			}
			bad := putFile(t, dir, "bad.json", b)
			good := putFile(t, dir, "good.json", leafJSON(t, []string{"A"}, map[string]leafUser{"A": ok}))
			for _, paths := range [][2]string{{bad, good}, {good, bad}} {
				_, err := LoadLEAF(paths[0], paths[1])
				if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, bad, tc.err)
				}
			}
		})
	}
	dir := t.TempDir()
	a := putFile(t, dir, "a.json", leafJSON(t, []string{"A"}, map[string]leafUser{"A": ok}))
	b := putFile(t, dir, "b.json", leafJSON(t, []string{"B"}, map[string]leafUser{"B": ok}))
	if _, err := LoadLEAF(a, b); err == nil || !strings.Contains(err.Error(), "no user in common") {
		t.Fatalf("disjoint users: err = %v", err)
	}
}

func TestLoadPlainText(t *testing.T) {
	dir := t.TempDir()
	putFile(t, dir, "b/train.txt", []byte("hello"))
	putFile(t, dir, "b/test.txt", []byte("abcd"))
	putFile(t, dir, "a/train.txt", []byte("xyz!"))
	putFile(t, dir, "a/test.txt", []byte("0123"))
	putFile(t, dir, "c/train.txt", []byte("long enough"))
	putFile(t, dir, "c/test.txt", []byte("ab")) // too short for one window: dropped
	putFile(t, dir, "notes.txt", []byte("not a client"))
	txt, err := LoadPlainText(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(txt.Clients) != 2 || txt.Clients[0].ID != "a" || txt.Clients[1].ID != "b" || txt.Name != filepath.Base(dir) {
		t.Fatalf("clients %+v", txt.Clients)
	}
	for _, c := range []struct {
		got  Sequences
		want string
	}{
		{txt.Clients[0].Train, "xyzyz!"}, {txt.Clients[0].Test, "012123"},
		{txt.Clients[1].Train, "helellllo"}, {txt.Clients[1].Test, "abcbcd"},
	} {
		if c.got.Len != 2 || !slices.Equal(c.got.Tokens, printableTokens(c.want)) {
			t.Errorf("got %+v, want windows %q", c.got, c.want)
		}
	}

	putFile(t, dir, "d/train.txt", []byte("caf\xc3\xa9 au lait"))
	putFile(t, dir, "d/test.txt", []byte("noir"))
	p := filepath.Join(dir, "d", "train.txt")
	if _, err := LoadPlainText(dir, 2); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "'é'") {
		t.Fatalf("err = %v, want one naming %s and 'é'", err, p)
	}
	if _, err := LoadPlainText(dir, 0); err == nil {
		t.Fatal("sequence length 0 accepted")
	}
	if _, err := LoadPlainText(filepath.Join(dir, "c"), 2); err == nil {
		t.Fatal("a folder without clients accepted")
	}
}
