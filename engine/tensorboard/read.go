package tensorboard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// Event is a decoded tensorflow.Event with the fields Writer writes.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	Values      []Value // the summary's values
}

// Value is one Summary.Value: a scalar (Simple) or a histogram (Histo).
type Value struct {
	Tag    string
	Simple *float32
	Histo  *Histogram
}

// Records splits b into its TFRecords, checking every length and CRC; the error names the
// record and byte offset.
func Records(b []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			return nil, fmt.Errorf("tensorboard: record %d at byte %d: %d bytes left, a header takes 12", len(out), off, len(b)-off)
		}
		head := b[off : off+8]
		n := binary.LittleEndian.Uint64(head)
		if got, want := binary.LittleEndian.Uint32(b[off+8:]), MaskedCRC32C(head); got != want {
			return nil, fmt.Errorf("tensorboard: record %d at byte %d: length CRC %#x, want %#x", len(out), off, got, want)
		}
		if rest := len(b) - off - 16; rest < 0 || n > uint64(rest) {
			return nil, fmt.Errorf("tensorboard: record %d at byte %d: length %d exceeds the %d bytes left", len(out), off, n, len(b)-off-16)
		}
		data := b[off+12 : off+12+int(n)]
		if got, want := binary.LittleEndian.Uint32(b[off+12+int(n):]), MaskedCRC32C(data); got != want {
			return nil, fmt.Errorf("tensorboard: record %d at byte %d: data CRC %#x, want %#x", len(out), off, got, want)
		}
		out = append(out, data)
		off += 16 + int(n)
	}
	return out, nil
}

// ReadFile reads an event file: every record framed and checked, every event decoded.
func ReadFile(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	evs, err := Read(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

// Read decodes the events of an event file's bytes.
func Read(b []byte) ([]Event, error) {
	recs, err := Records(b)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(recs))
	for i, r := range recs {
		if out[i], err = ParseEvent(r); err != nil {
			return nil, fmt.Errorf("tensorboard: event %d: %w", i, err)
		}
	}
	return out, nil
}

// ParseEvent decodes one Event message (fields it does not know are skipped).
func ParseEvent(b []byte) (Event, error) {
	var ev Event
	err := fields(b, func(f, wire int, v uint64, data []byte) error {
		switch {
		case f == 1 && wire == 1:
			ev.WallTime = math.Float64frombits(v)
		case f == 2 && wire == 0:
			ev.Step = int64(v)
		case f == 3 && wire == 2:
			ev.FileVersion = string(data)
		case f == 5 && wire == 2:
			return fields(data, func(f, wire int, _ uint64, data []byte) error {
				if f != 1 || wire != 2 {
					return nil
				}
				val, err := parseValue(data)
				ev.Values = append(ev.Values, val)
				return err
			})
		}
		return nil
	})
	return ev, err
}

func parseValue(b []byte) (Value, error) {
	var val Value
	err := fields(b, func(f, wire int, v uint64, data []byte) error {
		switch {
		case f == 1 && wire == 2:
			val.Tag = string(data)
		case f == 2 && wire == 5:
			x := math.Float32frombits(uint32(v))
			val.Simple = &x
		case f == 5 && wire == 2:
			h, err := parseHistogram(data)
			val.Histo = &h
			return err
		}
		return nil
	})
	return val, err
}

func parseHistogram(b []byte) (Histogram, error) {
	var h Histogram
	err := fields(b, func(f, wire int, v uint64, data []byte) error {
		x := math.Float64frombits(v)
		switch {
		case f >= 1 && f <= 5 && wire == 1:
			*[]*float64{&h.Min, &h.Max, &h.Num, &h.Sum, &h.SumSquares}[f-1] = x
		case (f == 6 || f == 7) && wire == 1: // unpacked
			if f == 6 {
				h.Limits = append(h.Limits, x)
			} else {
				h.Counts = append(h.Counts, x)
			}
		case (f == 6 || f == 7) && wire == 2:
			if len(data)%8 != 0 {
				return fmt.Errorf("packed doubles of %d bytes", len(data))
			}
			for i := 0; i < len(data); i += 8 {
				x := math.Float64frombits(binary.LittleEndian.Uint64(data[i:]))
				if f == 6 {
					h.Limits = append(h.Limits, x)
				} else {
					h.Counts = append(h.Counts, x)
				}
			}
		}
		return nil
	})
	return h, err
}

var errTruncated = errors.New("truncated message")

// fields walks a message's fields, giving each one's number, wire type, and value (a
// varint or fixed value in v, a length-delimited one in data).
func fields(b []byte, each func(field, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errTruncated
		}
		b = b[n:]
		f, wire := int(key>>3), int(key&7)
		if f == 0 {
			return fmt.Errorf("field number 0")
		}
		var v uint64
		var data []byte
		switch wire {
		case 0:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errTruncated
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errTruncated
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			if len(b) < 4 {
				return errTruncated
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errTruncated
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return fmt.Errorf("field %d: wire type %d", f, wire)
		}
		if err := each(f, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}
