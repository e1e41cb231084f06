package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ShakespeareLine is role r's line in WriteShakespeare's dataset.
func ShakespeareLine(r int) string {
	return fmt.Sprintf("ROLE%d: %s. ", r, strings.Repeat(string(rune('a'+r)), 3+r))
}

// WriteShakespeare writes a small dataset in FedTP's Shakespeare layout
// (<dir>/role_NN/{train,test}.txt) into a temporary folder and returns it: each role repeats
// its own line (12 times for training, 4 for testing), so the next character is learnable
// and depends on the role.
func WriteShakespeare(t testing.TB, roles int) string {
	t.Helper()
	dir := t.TempDir()
	for r := 0; r < roles; r++ {
		line := ShakespeareLine(r)
		for part, n := range map[string]int{"train.txt": 12, "test.txt": 4} {
			p := filepath.Join(dir, fmt.Sprintf("role_%02d", r), part)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.Repeat(line, n)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
