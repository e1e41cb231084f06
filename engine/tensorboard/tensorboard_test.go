package tensorboard

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// crcBitwise is CRC-32C computed bit by bit from the reflected Castagnoli polynomial,
// independently of hash/crc32's tables.
func crcBitwise(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c ^= uint32(x)
		for k := 0; k < 8; k++ {
			if c&1 != 0 {
				c = c>>1 ^ 0x82F63B78
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

// TestCRC32C holds CRC32C to the published check value and RFC 3720's (iSCSI) test
// vectors, and to a bitwise implementation; the mask is the rotation plus the constant.
func TestCRC32C(t *testing.T) {
	ramp := make([]byte, 32)
	down := make([]byte, 32)
	for i := range ramp {
		ramp[i], down[i] = byte(i), byte(31-i)
	}
	for _, c := range []struct {
		in   []byte
		want uint32
	}{
		{[]byte("123456789"), 0xE3069283},
		{make([]byte, 32), 0x8A9136AA},
		{bytes.Repeat([]byte{0xff}, 32), 0x62A8AB43},
		{ramp, 0x46DD794E},
		{down, 0x113FDB5C},
		{nil, 0},
	} {
		if got := CRC32C(c.in); got != c.want || crcBitwise(c.in) != c.want {
			t.Errorf("CRC32C(%x) = %#x (bitwise %#x), want %#x", c.in, got, crcBitwise(c.in), c.want)
		}
		c32 := c.want
		if got, want := MaskedCRC32C(c.in), ((c32>>15)|(c32<<17))+0xa282ead8; got != want {
			t.Errorf("masked CRC32C(%x) = %#x, want %#x", c.in, got, want)
		}
	}
	if got := MaskedCRC32C([]byte("123456789")); got != 0xc78ab0e5 { // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8 mod 2³², computed in Python
		t.Errorf("masked CRC of the check string %#x", got)
	}
}

// TestFileVersionBytes: the first record is exactly the bytes a hand encoding gives.
func TestFileVersionBytes(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 500000000)
	w, err := Create(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(w.Path()), "events.out.tfevents.1700000000.") {
		t.Errorf("file name %s", w.Path())
	}
	got, _ := os.ReadFile(w.Path())
	ev := []byte{0x09}
	ev = binary.LittleEndian.AppendUint64(ev, math.Float64bits(1700000000.5))
	ev = append(ev, 0x1a, 13)
	ev = append(ev, "brain.Event:2"...)
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(ev)))
	want = binary.LittleEndian.AppendUint32(want, MaskedCRC32C(want[:8]))
	want = append(want, ev...)
	want = binary.LittleEndian.AppendUint32(want, MaskedCRC32C(ev))
	if !bytes.Equal(got, want) {
		t.Fatalf("file\n% x\nwant\n% x", got, want)
	}
}

// TestRoundTrip writes scalars and a histogram and reads them back; a flipped byte
// anywhere and a truncated file are errors.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 0)
	w, err := Create(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	acc := []float64{0.1, 0.5, 0.5, 0.95, 1, 0}
	h := NewHistogram(acc, LinearLimits(0, 1, 20))
	if err := w.Scalars(3, now, Scalar{"a", 0.25}, Scalar{"b", math.NaN()}); err != nil {
		t.Fatal(err)
	}
	if err := w.Histogram(300, now.Add(time.Second), "acc", h); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].FileVersion != FileVersion || evs[1].Step != 3 || evs[2].Step != 300 || evs[2].WallTime != 1700000001 {
		t.Fatalf("events %+v", evs)
	}
	v := evs[1].Values
	if len(v) != 2 || v[0].Tag != "a" || *v[0].Simple != 0.25 || v[1].Tag != "b" || !math.IsNaN(float64(*v[1].Simple)) {
		t.Fatalf("scalars %+v", v)
	}
	g := evs[2].Values[0].Histo
	if g == nil || g.Num != 6 || g.Min != 0 || g.Max != 1 || g.Sum != 3.05 || math.Abs(g.SumSquares-(0.01+0.25+0.25+0.9025+1)) > 1e-15 {
		t.Fatalf("histogram %+v", g)
	}
	counts := make([]float64, 20)
	counts[0], counts[2], counts[10], counts[19] = 1, 1, 2, 2 // 0; 0.1; 0.5 twice; 0.95 and 1
	if !slices.Equal(g.Counts, counts) || !slices.Equal(g.Limits, h.Limits) || g.Limits[0] != 0.05 || g.Limits[19] != math.MaxFloat64 {
		t.Fatalf("buckets %v limits %v", g.Counts, g.Limits)
	}
	b, _ := os.ReadFile(w.Path())
	for i := range b {
		bad := slices.Clone(b)
		bad[i] ^= 0x20
		if _, err := Read(bad); err == nil {
			t.Fatalf("a flipped byte %d was read", i)
		}
	}
	if _, err := Read(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated file was read")
	}
}

// FuzzRead: any bytes are read or refused, never a panic; what reads back frames again
// to the same bytes.
func FuzzRead(f *testing.F) {
	var ev pbuf
	ev.double(1, 1)
	ev.bytes(3, []byte(FileVersion))
	f.Add(Record(ev))
	f.Add(append(Record(event(1, time.Unix(1, 0), nil)), Record([]byte{0x2a, 0x02, 0x0a, 0x00})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Records(b)
		if err != nil {
			return
		}
		var again []byte
		for _, r := range recs {
			again = append(again, Record(r)...)
			ParseEvent(r)
		}
		if !bytes.Equal(again, b) {
			t.Fatal("records do not frame back to the file")
		}
	})
}
