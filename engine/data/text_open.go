package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// IsText reports whether spec names a text dataset (OpenText's kinds).
func IsText(spec string) bool {
	kind, _, _ := strings.Cut(spec, ":")
	return kind == "shakespeare"
}

// OpenText loads a character-level dataset from a spec "shakespeare:dir", in either layout:
//
//	dir/<role>/train.txt, dir/<role>/test.txt    FedTP's (data/shakespeare): every window of
//	                                            seqLen+1 characters is a sequence
//	dir/train/*.json, dir/test/*.json            LEAF's output (one JSON file in each): the
//	                                            sequence length is LEAF's (80); seqLen must
//	                                            be 0 or equal it
func OpenText(spec string, seqLen int) (*Text, error) {
	kind, dir, _ := strings.Cut(spec, ":")
	if kind != "shakespeare" || dir == "" {
		return nil, fmt.Errorf("data: text dataset %q: want shakespeare:<dir>", spec)
	}
	trainJSON, testJSON := jsonFiles(filepath.Join(dir, "train")), jsonFiles(filepath.Join(dir, "test"))
	if len(trainJSON)+len(testJSON) == 0 {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("data: %s: not a directory (want FedTP's <role>/train.txt layout or LEAF's train/ and test/ JSON)", dir)
		}
		return LoadPlainText(dir, seqLen)
	}
	if len(trainJSON) != 1 || len(testJSON) != 1 {
		return nil, fmt.Errorf("data: %s: want one LEAF JSON file in train/ and one in test/, found %d and %d", dir, len(trainJSON), len(testJSON))
	}
	t, err := LoadLEAF(trainJSON[0], testJSON[0])
	if err != nil {
		return nil, err
	}
	if l := t.Clients[0].Train.Len; seqLen != 0 && seqLen != l {
		return nil, fmt.Errorf("data: %s: LEAF sequences have %d characters, but the sequence length is set to %d", dir, l, seqLen)
	}
	return t, nil
}

// jsonFiles returns the .json files in dir, sorted; none when dir cannot be read.
// (filepath.Glob would read pattern characters such as [ in dir as a pattern.)
func jsonFiles(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
