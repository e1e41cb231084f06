package main

import (
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unsafe"
)

// defaultWidth is the width listings wrap to when out is not a terminal (a pipe, a file).
const defaultWidth = 80

// termWidth is the number of columns of the terminal out writes to; defaultWidth when out
// is not a terminal or its width cannot be read. $COLUMNS, when set, is taken over the
// terminal's own width (a user's choice, as for ls).
func termWidth(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok {
		return defaultWidth
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return defaultWidth
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	var ws struct{ row, col, x, y uint16 }
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); errno != 0 || ws.col < 40 {
		return defaultWidth
	}
	return int(ws.col)
}

// wrap breaks text into lines of at most width characters at spaces, the first line
// starting after first characters (a label printed before it) and every line after it
// indented by indent spaces; a word longer than a line keeps a line of its own, whole.
func wrap(text string, width, first, indent int) []string {
	var lines []string
	var cur strings.Builder
	room := width - first
	for _, word := range strings.Fields(text) {
		n := len([]rune(word))
		if cur.Len() > 0 && len([]rune(cur.String()))+1+n > room {
			lines = append(lines, cur.String())
			cur.Reset()
			room = width - indent
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.Repeat(" ", indent) + lines[i]
	}
	return lines
}

// writeWrapped writes label, then text wrapped to width after it, its further lines
// indented by indent.
func writeWrapped(out io.Writer, width int, label, text string, indent int) {
	lines := wrap(text, width, len([]rune(label)), indent)
	io.WriteString(out, label+strings.Join(lines, "\n")+"\n")
}

// aboutMax is the longest first sentence pfl configs shows whole; a longer one is shown by
// its title (see about).
const aboutMax = 240

// about is what a config is, for pfl configs, from its leading comment (src: the file): the
// first sentence of its first paragraph, or, when that sentence runs past aboutMax
// characters, its title, the part before the first colon outside brackets that the rest
// explains ("FedTP paper, Table II, row "FedAvg-T""). Never a sentence cut in the middle.
func about(src []byte) string {
	var para []string
	for _, line := range strings.Split(string(src), "\n") {
		text, ok := strings.CutPrefix(line, "#")
		text = strings.TrimSpace(text)
		if !ok || text == "" {
			break
		}
		para = append(para, text)
	}
	s := firstSentence(strings.Join(para, " "))
	if len([]rune(s)) <= aboutMax {
		return s
	}
	if title, ok := titleOf(s); ok {
		return title
	}
	return s
}

// firstSentence is text up to its first full stop followed by a space or the end, the stop
// included; the stop of an abbreviation ("Fig. 9", "Eq. 3", "et al. 2023") or an initial
// does not end it.
func firstSentence(text string) string {
	r := []rune(text)
	for i, c := range r {
		if c != '.' || (i+1 < len(r) && r[i+1] != ' ') {
			continue
		}
		start := i
		for start > 0 && unicode.IsLetter(r[start-1]) || start > 0 && r[start-1] == '.' {
			start--
		}
		word := string(r[start:i])
		if len([]rune(word)) == 1 && unicode.IsUpper(r[start]) || abbreviations[strings.ToLower(word)] {
			continue
		}
		return string(r[:i+1])
	}
	return text
}

// abbreviations are the words whose full stop ends no sentence in the configs' comments.
var abbreviations = map[string]bool{"fig": true, "figs": true, "eq": true, "eqs": true, "tab": true, "al": true,
	"e.g": true, "i.e": true, "vs": true, "cf": true, "sec": true, "no": true, "alg": true, "resp": true, "approx": true}

// titleOf is s up to its first colon outside brackets and quotes, when that leaves a title
// of a few words (at least 8 characters).
func titleOf(s string) (string, bool) {
	depth, quoted := 0, false
	for i, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case c == '(' || c == '[':
			depth++
		case (c == ')' || c == ']') && depth > 0:
			depth--
		case c == ':' && depth == 0 && !quoted && i >= 8 && i+1 < len(s) && s[i+1] == ' ':
			return s[:i], true
		}
	}
	return "", false
}
