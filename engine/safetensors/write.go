package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"pfl/engine/internal/atomicfile"
)

// headerEntry is one tensor's record as written; the field order matches the Python writer.
type headerEntry struct {
	DType       DType     `json:"dtype"`
	Shape       []int64   `json:"shape"`
	DataOffsets [2]uint64 `json:"data_offsets"`
}

// Write encodes the tensors, laid out in the given order, and the optional metadata. The
// header's keys are sorted (as encoding a JSON map sorts them) and the header is padded
// with spaces to a multiple of 8 bytes, so the data section is 8-byte aligned as the
// Python library writes it. Every tensor is checked before anything is written.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	if err := write(w, tensors, metadata); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

func write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header, err := encodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, t := range tensors {
		data, err := t.Bytes()
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// encodeHeader validates the tensors and metadata and returns the padded JSON header.
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	entries := make(map[string]any, len(tensors)+1)
	var off uint64
	for _, t := range tensors {
		switch {
		case t.Name == "":
			return nil, errEmptyName
		case t.Name == metadataKey:
			return nil, fmt.Errorf("tensor name %q is reserved for metadata", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", t.Name)
		}
		if _, dup := entries[t.Name]; dup {
			return nil, fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		if err := t.check(); err != nil {
			return nil, err
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{} // a scalar's shape is [], not null
		}
		size, _ := byteSize(t.DType, t.Shape) // checked above
		end := off + size
		entries[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]uint64{off, end}}
		off = end
	}
	if len(metadata) > 0 {
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("metadata %q: %q is not valid UTF-8", k, v)
			}
		}
		entries[metadataKey] = metadata
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // write "<" and "&" as themselves, as Python's json does
	if err := enc.Encode(entries); err != nil {
		return nil, err
	}
	header := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	return header, nil
}

// WriteFile writes the file at path atomically: it writes a temporary file in the same
// directory and renames it over path, so a failure never leaves a partial or truncated
// checkpoint where a reader (or PyTorch) would pick it up.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return write(w, tensors, metadata) }); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
