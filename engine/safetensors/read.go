package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header (100 MiB, as the reference implementation does), so
// that a corrupt length field is reported instead of trusted.
const MaxHeaderSize = 100 << 20

// Read decodes a whole safetensors stream. The returned tensors' Data slices share one
// buffer holding the file (each capped, so appending to one cannot overwrite another).
func Read(r io.Reader) (*File, error) {
	// Reading everything first means allocation follows the bytes actually present, never a
	// length field.
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := decode(buf)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// ReadFile decodes the safetensors file at path; errors name the file.
func ReadFile(path string) (*File, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := decode(buf)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

// entry is one tensor's header record, decoded field by field so that each malformed
// field gets its own message.
type entry struct {
	DType       *string         `json:"dtype"`
	Shape       json.RawMessage `json:"shape"`
	DataOffsets json.RawMessage `json:"data_offsets"`
}

// span is a tensor with its position in the data section.
type span struct {
	t          Tensor
	begin, end uint64
}

func decode(buf []byte) (*File, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if err := checkHeaderSize(n, uint64(len(buf)-8)); err != nil {
		return nil, err
	}
	header, data := buf[8:8+n], buf[8+n:]
	f, spans, err := layout(header, uint64(len(data)))
	if err != nil {
		return nil, err
	}
	for _, s := range spans {
		s.t.Data = data[s.begin:s.end:s.end]
		f.Tensors = append(f.Tensors, s.t)
	}
	return f, nil
}

// checkHeaderSize refuses a header length field n that exceeds the limit or the rest bytes
// after it.
func checkHeaderSize(n, rest uint64) error {
	if n > MaxHeaderSize {
		return fmt.Errorf("header size %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if n > rest {
		return fmt.Errorf("header size %d is larger than the remaining %d bytes of the file", n, rest)
	}
	return nil
}

// OpenFile reads the header of the safetensors file at path and returns its tensors
// without their data: each tensor's Source reads its bytes from the file when asked
// (Bytes, Float32s, Float64s), so a file larger than the memory free can be verified and
// loaded one tensor at a time. The file stays open until Close. The layout is checked as
// Read checks it; errors name the file.
func OpenFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := openLayout(fh)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f.closer = fh
	return f, nil
}

func openLayout(fh *os.File) (*File, error) {
	info, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	size := uint64(info.Size())
	var head [8]byte
	if size < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", size)
	}
	if _, err := fh.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(head[:])
	if err := checkHeaderSize(n, size-8); err != nil {
		return nil, err
	}
	header := make([]byte, n)
	if _, err := fh.ReadAt(header, 8); err != nil {
		return nil, err
	}
	f, spans, err := layout(header, size-8-n)
	if err != nil {
		return nil, err
	}
	for _, s := range spans {
		t, off, length := s.t, int64(8+n+s.begin), s.end-s.begin
		t.Source = func() ([]byte, error) {
			buf := make([]byte, length)
			if _, err := fh.ReadAt(buf, off); err != nil {
				return nil, err
			}
			return buf, nil
		}
		f.Tensors = append(f.Tensors, t)
	}
	return f, nil
}

// layout decodes header, which describes a data section of dataLen bytes: the metadata and
// the tensors' spans in offset order, which must cover the data section exactly.
func layout(header []byte, dataLen uint64) (*File, []span, error) {
	if !utf8.Valid(header) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	fields, err := headerFields(header)
	if err != nil {
		return nil, nil, err
	}

	f := &File{}
	spans := make([]span, 0, len(fields))
	for _, kv := range fields {
		if kv.key == metadataKey {
			if err := json.Unmarshal(kv.value, &f.Metadata); err != nil {
				return nil, nil, fmt.Errorf("header: __metadata__ is not an object of strings: %w", err)
			}
			continue
		}
		s, err := parseEntry(kv.key, kv.value, dataLen)
		if err != nil {
			return nil, nil, err
		}
		spans = append(spans, s)
	}

	// The data section must be covered exactly, so walking the tensors in offset order each
	// must start where the previous ended. Empty tensors sort before a non-empty one at the
	// same offset; names break the remaining ties so the order is deterministic.
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.t.Name < b.t.Name
	})
	var pos uint64
	for i, s := range spans {
		switch {
		case s.begin < pos:
			return nil, nil, fmt.Errorf("tensor %q at data_offsets [%d, %d] overlaps tensor %q ending at %d",
				s.t.Name, s.begin, s.end, spans[i-1].t.Name, pos)
		case s.begin > pos:
			return nil, nil, fmt.Errorf("gap in data section: bytes [%d, %d) before tensor %q are not covered by any tensor",
				pos, s.begin, s.t.Name)
		}
		pos = s.end
	}
	if pos != dataLen {
		return nil, nil, fmt.Errorf("gap in data section: trailing bytes [%d, %d) are not covered by any tensor", pos, dataLen)
	}
	return f, spans, nil
}

type field struct {
	key   string
	value json.RawMessage
}

// headerFields splits the header object into its members in file order. Walking tokens
// rather than unmarshalling into a map lets us reject duplicate keys, which a map would
// silently collapse, and anything after the object other than space padding.
func headerFields(header []byte) ([]field, error) {
	if !json.Valid(header) {
		return nil, errors.New("header is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("header is not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("header is not a JSON object")
	}
	var fields []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header is not valid JSON: %w", err)
		}
		key, _ := tok.(string) // json.Valid guarantees object keys are strings
		if seen[key] {
			return nil, fmt.Errorf("header has duplicate key %q", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("header is not valid JSON: %w", err)
		}
		fields = append(fields, field{key, v})
	}
	return fields, nil
}

// parseEntry validates one tensor record against a data section of dataLen bytes.
func parseEntry(name string, raw json.RawMessage, dataLen uint64) (span, error) {
	if name == "" {
		return span{}, fmt.Errorf("header: %w", errEmptyName)
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return span{}, fmt.Errorf("header: tensor %q is not an object with dtype, shape and data_offsets: %w", name, err)
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return span{}, fmt.Errorf("header: tensor %q must have dtype, shape and data_offsets", name)
	}
	t := Tensor{Name: name, DType: DType(*e.DType)}
	if t.DType.Size() == 0 {
		return span{}, fmt.Errorf("tensor %q: unknown dtype %q", name, *e.DType)
	}
	if err := json.Unmarshal(e.Shape, &t.Shape); err != nil || t.Shape == nil {
		return span{}, fmt.Errorf("tensor %q: shape %s is not a list of integers", name, e.Shape)
	}
	want, err := byteSize(t.DType, t.Shape)
	if err != nil {
		return span{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	var off []uint64
	if err := json.Unmarshal(e.DataOffsets, &off); err != nil || len(off) != 2 {
		return span{}, fmt.Errorf("tensor %q: data_offsets %s must be two non-negative integers", name, e.DataOffsets)
	}
	begin, end := off[0], off[1]
	switch {
	case begin > end:
		return span{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] begin after end", name, begin, end)
	case end > dataLen:
		return span{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] end beyond the %d-byte data section", name, begin, end, dataLen)
	case end-begin != want:
		return span{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] span %d bytes but shape %v of %s needs %d",
			name, begin, end, end-begin, t.Shape, t.DType, want)
	}
	return span{t: t, begin: begin, end: end}, nil
}
