// Package suggest finds the names closest to a misspelt one, for the "did you mean" of an
// error message (an unknown algorithm, an unknown built-in config).
package suggest

import (
	"slices"
	"strings"
)

// maxSuggestions is the most names Closest returns.
const maxSuggestions = 3

// Closest returns the names of known nearest to name by edit distance (insertions,
// deletions, substitutions and swaps of neighbours, each counting 1; case ignored), those
// within reach of it: 1 edit for a name of up to 3 characters, 2 up to 8, a quarter of its
// length beyond. Ties are all returned, in the order of known, at most maxSuggestions;
// none when nothing is that close (a name too far off gets no guess).
func Closest(name string, known []string) []string {
	lower := strings.ToLower(name)
	reach := max(len([]rune(name))/4, 2)
	if len([]rune(name)) <= 3 {
		reach = 1
	}
	best, out := reach+1, []string(nil)
	for _, k := range known {
		d := Distance(lower, strings.ToLower(k))
		switch {
		case d > reach || d > best || k == name:
		case d < best:
			best, out = d, []string{k}
		case !slices.Contains(out, k):
			out = append(out, k)
		}
	}
	if len(out) > maxSuggestions {
		out = out[:maxSuggestions]
	}
	return out
}

// DidYouMean is " (did you mean X?)", " (did you mean X or Y?)", …, for the names of known
// closest to name (Closest); "" when none is close.
func DidYouMean(name string, known []string) string {
	c := Closest(name, known)
	switch len(c) {
	case 0:
		return ""
	case 1:
		return " (did you mean " + c[0] + "?)"
	}
	return " (did you mean " + strings.Join(c[:len(c)-1], ", ") + " or " + c[len(c)-1] + "?)"
}

// Distance is the optimal string alignment distance between a and b, in runes: the fewest
// insertions, deletions, substitutions and swaps of two neighbours that turn a into b, no
// character edited twice ("fetdp" is 1 from "fedtp").
func Distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// three rows of the table: two before the current one, for swaps
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
