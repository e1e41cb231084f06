// Package tensorboard writes TensorBoard event files with no dependency: TFRecord framing
// (little-endian uint64 length, masked CRC32C of the length, the record, masked CRC32C of
// the record; CRC32C is CRC-32 with the Castagnoli polynomial, masked as
// ((crc >> 15) | (crc << 17)) + 0xa282ead8) around hand-encoded tensorflow.Event protocol
// buffers: a file_version event first, then events whose summary holds scalars
// (simple_value) or histograms (HistogramProto). It also reads such files back (Read,
// ReadFile), checking the framing and every CRC, which the tests use to hold the files to
// the metrics they record.
package tensorboard

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// FileVersion is the file_version of the first event of every file TensorBoard reads.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC-32 of b with the Castagnoli polynomial (reflected 0x82F63B78).
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// MaskedCRC32C is TFRecord's masked CRC32C of b: the CRC rotated right by 15 bits plus
// 0xa282ead8 (mod 2³²).
func MaskedCRC32C(b []byte) uint32 {
	c := CRC32C(b)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// Record frames data as one TFRecord.
func Record(data []byte) []byte {
	out := make([]byte, 0, len(data)+16)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	out = append(out, n[:]...)
	out = binary.LittleEndian.AppendUint32(out, MaskedCRC32C(n[:]))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, MaskedCRC32C(data))
}

// Scalar is one named value of a scalar event.
type Scalar struct {
	Tag   string
	Value float64 // stored as a float32 (simple_value), as TensorBoard's scalars are
}

// Histogram is a HistogramProto: the values' count, sum, sum of squares, extremes and
// bucket counts. Bucket i counts the values v with Limits[i−1] ≤ v < Limits[i] (the
// first from −∞, the last up to +∞); TensorBoard draws the outer buckets' edges at Min and
// Max.
type Histogram struct {
	Min, Max, Num, Sum, SumSquares float64
	Limits, Counts                 []float64
}

// NewHistogram bins values into the buckets whose upper limits are limits (increasing;
// the last bucket takes every value at or above the last but one limit).
func NewHistogram(values, limits []float64) Histogram {
	h := Histogram{Min: math.Inf(1), Max: math.Inf(-1), Limits: limits, Counts: make([]float64, len(limits))}
	if len(values) == 0 {
		h.Min, h.Max = 0, 0
	}
	for _, v := range values {
		h.Min, h.Max = math.Min(h.Min, v), math.Max(h.Max, v)
		h.Num++
		h.Sum += v
		h.SumSquares += v * v
		i := 0
		for i < len(limits)-1 && v >= limits[i] {
			i++
		}
		h.Counts[i]++
	}
	return h
}

// LinearLimits are n buckets' upper limits over [lo, hi]: lo + (hi − lo)·i/n for
// i = 1 … n − 1, and a last limit of +MaxFloat64 (TensorBoard draws it at the maximum).
func LinearLimits(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	for i := 1; i < n; i++ {
		out[i-1] = lo + (hi-lo)*float64(i)/float64(n)
	}
	out[n-1] = math.MaxFloat64
	return out
}

// Writer appends events to one event file.
type Writer struct {
	path string
	f    *os.File
	w    *bufio.Writer
}

// Create makes dir and starts dir/events.out.tfevents.<unix seconds>.<host> (the name
// TensorBoard looks for) with its file_version event, stamped now.
func Create(dir string, now time.Time) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	path := filepath.Join(dir, "events.out.tfevents."+strconv.FormatInt(now.Unix(), 10)+"."+host)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, f: f, w: bufio.NewWriter(f)}
	var ev pbuf
	ev.double(1, wallTime(now))
	ev.bytes(3, []byte(FileVersion))
	if err := w.write(ev); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func (w *Writer) write(ev pbuf) error {
	_, err := w.w.Write(Record(ev))
	if err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.path, err)
	}
	return nil
}

// event encodes an Event at step and wall whose summary holds values (encoded
// Summary.Value messages).
func event(step int64, wall time.Time, values []pbuf) pbuf {
	var sum pbuf
	for _, v := range values {
		sum.bytes(1, v)
	}
	var ev pbuf
	ev.double(1, wallTime(wall))
	ev.varint(2, uint64(step))
	ev.bytes(5, sum)
	return ev
}

// Scalars writes one event at step holding the scalars.
func (w *Writer) Scalars(step int64, wall time.Time, scalars ...Scalar) error {
	var vals []pbuf
	for _, s := range scalars {
		var v pbuf
		v.bytes(1, []byte(s.Tag))
		v.float(2, float32(s.Value))
		vals = append(vals, v)
	}
	return w.write(event(step, wall, vals))
}

// Histogram writes one event at step holding the histogram h under tag.
func (w *Writer) Histogram(step int64, wall time.Time, tag string, h Histogram) error {
	var hp pbuf
	hp.double(1, h.Min)
	hp.double(2, h.Max)
	hp.double(3, h.Num)
	hp.double(4, h.Sum)
	hp.double(5, h.SumSquares)
	hp.packed(6, h.Limits)
	hp.packed(7, h.Counts)
	var v pbuf
	v.bytes(1, []byte(tag))
	v.bytes(5, hp)
	return w.write(event(step, wall, []pbuf{v}))
}

// Flush writes the buffered events to the file, so that TensorBoard sees them.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.path, err)
	}
	return nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tensorboard: %s: %w", w.path, cerr)
	}
	return err
}

// pbuf is a protocol-buffer message under construction.
type pbuf []byte

func (p *pbuf) key(field, wire int) { *p = binary.AppendUvarint(*p, uint64(field<<3|wire)) }

func (p *pbuf) varint(field int, v uint64) {
	p.key(field, 0)
	*p = binary.AppendUvarint(*p, v)
}

func (p *pbuf) double(field int, v float64) {
	p.key(field, 1)
	*p = binary.LittleEndian.AppendUint64(*p, math.Float64bits(v))
}

func (p *pbuf) float(field int, v float32) {
	p.key(field, 5)
	*p = binary.LittleEndian.AppendUint32(*p, math.Float32bits(v))
}

func (p *pbuf) bytes(field int, b []byte) {
	p.key(field, 2)
	*p = binary.AppendUvarint(*p, uint64(len(b)))
	*p = append(*p, b...)
}

func (p *pbuf) packed(field int, vs []float64) {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	p.bytes(field, b)
}
