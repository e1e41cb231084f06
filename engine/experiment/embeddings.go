package experiment

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"pfl/engine/fl"
)

// exportEmbeddings writes the client embeddings z_i of FedTP's, TransFed's or pFedHN's
// hypernetwork to dir/embeddings.csv, one row per client (client, novel, z...), for the
// t-SNE view of FedTP's Fig. 9 and TransFed's Fig. 4. Runs without a hypernetwork write
// nothing.
func exportEmbeddings(dir string, run *fl.Run) error {
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
	path := filepath.Join(dir, "embeddings.csv")
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
