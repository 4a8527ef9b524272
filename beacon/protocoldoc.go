package beacon

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The markers around PROTOCOL.md's embedding table, which go generate
// writes from scriptParamList: a parameter is declared once, and its row,
// its URL check, its help line and the script's constants follow.
const (
	embeddingTableStart = "<!-- the embedding's parameters: written by go generate ./beacon from scriptParamList -->"
	embeddingTableEnd   = "<!-- end of the embedding's parameters -->"
)

// WriteProtocolTables returns doc, the text of PROTOCOL.md, with the
// tables it takes from this package's definitions written anew: the
// embedding's parameters (ScriptParams).
func WriteProtocolTables(doc string) (string, error) {
	before, rest, ok := strings.Cut(doc, embeddingTableStart+"\n")
	if !ok {
		return "", fmt.Errorf("PROTOCOL.md has no line %q", embeddingTableStart)
	}
	_, after, ok := strings.Cut(rest, embeddingTableEnd)
	if !ok {
		return "", fmt.Errorf("PROTOCOL.md has no line %q after the table", embeddingTableEnd)
	}
	return before + embeddingTableStart + "\n" + embeddingTable() + embeddingTableEnd + after, nil
}

// embeddingTable is the Markdown table of the embedding's parameters,
// its columns padded to their widest cell.
func embeddingTable() string {
	rows := [][]string{{"parameter", "default", "meaning"}}
	for _, p := range scriptParamList {
		meaning := p.Meaning
		if p.design {
			meaning += "; reported in `par` as `" + p.Name + "`"
		}
		rows = append(rows, []string{"`" + p.Name + "`", p.Default, meaning})
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i == len(cells)-1 {
				fmt.Fprintf(&b, "| %s |\n", c) // the last column unpadded, as written by hand
				break
			}
			fmt.Fprintf(&b, "| %s%s ", c, strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
	}
	line(rows[0])
	for i := range width[:len(width)-1] {
		b.WriteString("|" + strings.Repeat("-", width[i]+2))
	}
	b.WriteString("|---------|\n")
	for _, r := range rows[1:] {
		line(r)
	}
	return b.String()
}
