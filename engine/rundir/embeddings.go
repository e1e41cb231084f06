package rundir

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"pfl/engine/fl"
)

// EmbeddingsFile holds a run's client embeddings (WriteEmbeddings).
const EmbeddingsFile = "embeddings.csv"

// WriteEmbeddings writes the client embeddings z_i of FedTP's, TransFed's or pFedHN's
// hypernetwork to dir/embeddings.csv, one row per client (client, novel, z...), for the
// t-SNE view of FedTP's Fig. 9 and TransFed's Fig. 4. Runs without a hypernetwork write
// nothing.
func WriteEmbeddings(dir string, run *fl.Run) error {
	net := run.HyperNet()
	if net == nil {
		return nil
	}
	z := net.Params()[0] // [N, Embed]
	v, err := z.Float64s()
	if err != nil {
		return err
	}
	n, e := int(z.Size(0)), int(z.Size(1))
	path := filepath.Join(dir, EmbeddingsFile)
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	fmt.Fprint(w, "client,novel")
	for j := 0; j < e; j++ {
		fmt.Fprintf(w, ",z%d", j)
	}
	fmt.Fprintln(w)
	for c := 0; c < n; c++ {
		fmt.Fprintf(w, "%d,%t", c, slices.Contains(run.Novel(), c))
		for j := 0; j < e; j++ {
			fmt.Fprint(w, ",", strconv.FormatFloat(v[c*e+j], 'g', -1, 64))
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Embeddings are a run's client embeddings (embeddings.csv).
type Embeddings struct {
	Clients []int       // the client of each row
	Novel   []bool      // whether it was held out of training
	Z       [][]float64 // its embedding
}

// ReadEmbeddings reads dir/embeddings.csv (client, novel, z0, z1, ...).
func ReadEmbeddings(dir string) (*Embeddings, error) {
	path := filepath.Join(dir, EmbeddingsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 || len(rows[0]) < 3 || rows[0][0] != "client" || rows[0][1] != "novel" {
		return nil, fmt.Errorf("%s: want a header client,novel,z0,... and a row per client", path)
	}
	e := &Embeddings{}
	for i, r := range rows[1:] {
		c, err := strconv.Atoi(r[0])
		novel, err2 := strconv.ParseBool(r[1])
		if err != nil || err2 != nil {
			return nil, fmt.Errorf("%s: row %d: bad client or novel field", path, i+2)
		}
		z := make([]float64, len(r)-2)
		for j, s := range r[2:] {
			v, err := strconv.ParseFloat(s, 64)
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s: row %d, column %s: %q is not a number", path, i+2, rows[0][j+2], s)
			case math.IsNaN(v) || math.IsInf(v, 0):
				// a diverged hypernetwork's embeddings: t-SNE has no distance to work with
				return nil, fmt.Errorf("%s: row %d (client %d), column %s: %s is not a finite number (did the run diverge?)", path, i+2, c, rows[0][j+2], s)
			}
			z[j] = v
		}
		e.Clients, e.Novel, e.Z = append(e.Clients, c), append(e.Novel, novel), append(e.Z, z)
	}
	return e, nil
}
