package fetch

import (
	"fmt"
	"io"
	"os"
	"time"
)

// meter reports a transfer: on a terminal a bar redrawn in place at most five times a
// second, elsewhere (a log file, a pipe) one line when it starts and one when it ends.
type meter struct {
	w           io.Writer
	tty         bool
	name        string
	done, total int64 // total < 0: unknown
	start, last time.Time
	from        int64 // bytes the transfer resumed after
}

// newMeter starts reporting the transfer of name from address u, resumed after have bytes,
// of total bytes in all (< 0: unknown), on w (nil: nowhere).
func newMeter(w io.Writer, name, u string, have, total int64) *meter {
	m := &meter{w: w, tty: isTerminal(w), name: name, done: have, total: total, start: time.Now(), from: have}
	if w != nil && !m.tty {
		resumed := ""
		if have > 0 {
			resumed = " (resuming after " + byteCount(have) + ")"
		}
		fmt.Fprintf(w, "fetching %s from %s%s\n", name, u, resumed)
	}
	return m
}

// Write counts p's bytes (the meter sits on a TeeReader).
func (m *meter) Write(p []byte) (int, error) {
	m.done += int64(len(p))
	if m.tty && time.Since(m.last) > 200*time.Millisecond {
		m.last = time.Now()
		m.draw()
	}
	return len(p), nil
}

func (m *meter) draw() {
	rate := float64(m.done-m.from) / max(time.Since(m.start).Seconds(), 1e-3)
	if m.total > 0 {
		const width = 30
		fill := int(width * m.done / m.total)
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if i < fill {
				bar[i] = '='
			}
		}
		fmt.Fprintf(m.w, "\r%s [%s] %3d%% %s of %s, %s/s   ", m.name, bar, 100*m.done/m.total, byteCount(m.done), byteCount(m.total), byteCount(int64(rate)))
		return
	}
	fmt.Fprintf(m.w, "\r%s %s, %s/s   ", m.name, byteCount(m.done), byteCount(int64(rate)))
}

// finish ends the report; ok says whether the transfer completed.
func (m *meter) finish(ok bool) {
	switch {
	case m.w == nil:
	case m.tty:
		m.draw()
		fmt.Fprintln(m.w)
	case ok:
		fmt.Fprintf(m.w, "fetched %s: %s in %.1f s\n", m.name, byteCount(m.done), time.Since(m.start).Seconds())
	default:
		fmt.Fprintf(m.w, "fetching %s stopped after %s\n", m.name, byteCount(m.done))
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
