package report

import (
	"html"
	"html/template"
	"maps"
	"slices"
	"strings"

	"pfl/engine/config"
)

// markdownHTML renders the Markdown pfl writes in results.md as HTML: a block of lines that
// all start with "|" is a table (its first row the header, the separator row under it
// dropped), any other block of lines a paragraph; `code` spans become <code>. Each table
// sits in a box that scrolls sideways rather than running off the page. Every text is
// escaped.
func markdownHTML(md string) template.HTML {
	var b strings.Builder
	for _, block := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n\n") {
		lines := strings.Split(strings.Trim(block, "\n"), "\n")
		if len(lines) == 1 && strings.TrimSpace(lines[0]) == "" {
			continue
		}
		// a paragraph that leads into a table without a blank line: split them
		first := slices.IndexFunc(lines, isTableRow)
		if first > 0 {
			paragraph(&b, lines[:first])
			lines = lines[first:]
		}
		if first < 0 {
			paragraph(&b, lines)
			continue
		}
		end := slices.IndexFunc(lines, func(l string) bool { return !isTableRow(l) })
		if end < 0 {
			end = len(lines)
		}
		mdTable(&b, lines[:end])
		if end < len(lines) {
			paragraph(&b, lines[end:])
		}
	}
	return template.HTML(b.String())
}

func isTableRow(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "|") }

// paragraph writes lines as one paragraph.
func paragraph(b *strings.Builder, lines []string) {
	b.WriteString("<p>")
	b.WriteString(inline(strings.Join(lines, " ")))
	b.WriteString("</p>\n")
}

// inline is s escaped, with `code` spans as <code>.
func inline(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
		case i%2 == 1: // an unclosed backquote: the text as written
			b.WriteString("`" + html.EscapeString(p))
		default:
			b.WriteString(html.EscapeString(p))
		}
	}
	return b.String()
}

// mdTable writes Markdown table rows as an HTML table in a box that scrolls sideways.
func mdTable(b *strings.Builder, rows []string) {
	b.WriteString(`<div class="wide"><table class="md">` + "\n")
	for i, r := range rows {
		cells := strings.Split(strings.Trim(strings.TrimSpace(r), "|"), "|")
		if i == 1 && isSeparator(cells) {
			continue
		}
		tag := "td"
		if i == 0 {
			tag = "th"
		}
		b.WriteString("<tr>")
		for j, c := range cells {
			class := ""
			if j == 0 {
				class = ` class="name"`
			}
			b.WriteString("<" + tag + class + ">" + inline(strings.TrimSpace(c)) + "</" + tag + ">")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table></div>\n")
}

// isSeparator reports whether cells are a Markdown table's separator row (---, :--:).
func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(strings.TrimSpace(c), "-:") != "" {
			return false
		}
	}
	return true
}

// memberConfigs splits a suite's or grid's config for its page: shared is top's keys and
// values with each key the members (named names, their configs cfgs) set alike shown with
// the members' value (a suite's algorithm.name is its members', not the default the suite
// file leaves), and differ a table of the keys whose values differ between members, a
// column per member (nil when none do). The keys of ownKeys keep top's value.
func memberConfigs(top config.Config, names []string, cfgs []config.Config) (shared []keyValue, differ *htmlTable) {
	topFlat, _ := config.Flatten(top)
	var flats []map[string]any
	keys := map[string]bool{}
	for _, c := range cfgs {
		f, _ := config.Flatten(c)
		flats = append(flats, f)
		for k := range f {
			keys[k] = true
		}
	}
	t := &htmlTable{Caption: "Keys the members set differently", Header: append([]string{"key"}, names...)}
	for _, kv := range flatConfig(topFlat) {
		if !keys[kv.Key] || len(flats) == 0 || ownKeys[kv.Key] {
			shared = append(shared, kv)
			delete(keys, kv.Key)
			continue
		}
		if row, same := memberRow(kv.Key, flats); same {
			shared = append(shared, keyValue{kv.Key, row[1]})
		} else {
			t.Rows = append(t.Rows, row)
		}
		delete(keys, kv.Key)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if row, same := memberRow(k, flats); !same && !ownKeys[k] {
			t.Rows = append(t.Rows, row)
		}
	}
	if len(t.Rows) == 0 {
		return shared, nil
	}
	return shared, t
}

// ownKeys are the keys a suite's or grid's page shows as its own config sets them: its
// members' names, folders and seeds are theirs by construction, and the keys that make it
// a suite or grid are not set in its members.
var ownKeys = map[string]bool{"name": true, "out": true, "seed": true, "suite": true, "suite_table": true, "seeds": true, "sweep": true}

// memberRow is key's row of the members' table (the key, then each member's value; "–"
// where a member lacks it) and whether every member has the same value.
func memberRow(key string, flats []map[string]any) ([]string, bool) {
	row := []string{key}
	same := true
	for i, f := range flats {
		v := "–"
		if x, ok := f[key]; ok {
			v = jsonText(x)
		}
		row = append(row, v)
		same = same && (i == 0 || v == row[1])
	}
	return row, same
}
