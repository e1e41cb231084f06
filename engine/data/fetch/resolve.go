package fetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Resolve finds the data a data.dataset spec ("kind" or "kind:path") names and returns the
// spec to open: unchanged when its path exists (configs name data/cifar-10-binary.tar.gz,
// relative to the current folder, as before) or its kind is not in the catalog
// (synthetic, domains); else (for a relative path or none: an absolute path is the user's
// own copy, whose absence is an error) the spec of the system's copy where there is one
// (Debian's Fashion-MNIST), or of the copy fetched into the data folder. When that copy is
// missing too, download fetches it (data.download); otherwise the error names the path
// looked for and the pfl data get command that fetches it.
func Resolve(ctx context.Context, spec string, download bool, o Options) (string, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	d, ok := Lookup(kind)
	if !ok {
		return spec, nil
	}
	path, side := rest, ""
	if kind == "rsna" || strings.HasPrefix(kind, "kermany") {
		// a chest X-ray spec may end in :<side>
		if i := strings.LastIndexByte(rest, ':'); i >= 0 && rest[i+1:] != "" && strings.Trim(rest[i+1:], "0123456789") == "" {
			path, side = rest[:i], rest[i:]
		}
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return spec, nil
		}
	}
	if _, err := os.Stat(d.System); d.System != "" && err == nil && !filepath.IsAbs(path) {
		if path == "" {
			return spec, nil // the loader's default is the system's copy
		}
		return kind + ":" + d.System + side, nil
	}
	if filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: %s does not exist; point data.dataset at your copy, or fetch %s with pfl data get %s and write data.dataset: %s (the fetched copy needs no path)",
			kind, path, d.Title, d.Name, kind)
	}
	root, err := o.root()
	if err != nil {
		return "", err
	}
	local := filepath.Join(Dir(root, d), d.Path)
	if _, ok := Fetched(root, d); ok {
		return kind + ":" + local + side, nil
	}
	if download && d.Manual == "" {
		if _, err := Get(ctx, d, o); err != nil {
			return "", err
		}
		return kind + ":" + local + side, nil
	}
	var where []string
	if path != "" {
		cwd, _ := os.Getwd()
		where = append(where, fmt.Sprintf("%s (in %s)", path, cwd))
	}
	if d.System != "" {
		where = append(where, d.System+" (the system's copy)")
	}
	where = append(where, local+" (pfl's data folder, "+RootEnv+")")
	how := fmt.Sprintf("fetch it with: pfl data get %s", d.Name)
	switch {
	case d.Manual != "":
		how = fmt.Sprintf("it is fetched by hand: pfl data get %s prints the steps", d.Name)
	case d.System != "":
		how += " (or, in a config, data.download: true; or install Debian's dataset-fashion-mnist)"
	default:
		how += " (or, in a config, data.download: true)"
	}
	if d.Manual == "" {
		how += fmt.Sprintf("; without a network, pfl data get %s --from FILE takes a copy (or set %s)", d.Name, MirrorEnv)
	}
	return "", &MissingError{Dataset: d.Name, Message: fmt.Sprintf("%s is missing: not at %s; %s", d.Title, strings.Join(where, ", nor "), how)}
}

// MissingError is Resolve's error for a dataset that is neither where the spec says nor
// fetched.
type MissingError struct {
	Dataset string // the catalog's name, for pfl data get
	Message string
}

// Error says where the dataset was looked for and how to fetch it.
func (e *MissingError) Error() string { return e.Message }

// IsMissing reports whether err is (or wraps) a MissingError.
func IsMissing(err error) bool {
	var m *MissingError
	return errors.As(err, &m)
}
