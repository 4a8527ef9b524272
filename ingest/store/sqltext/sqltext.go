// Package sqltext reads the project's SQL files, schema and queries alike:
// text/template over embedded files, where a template chooses among fixed
// structure and every value a request chose is bound by name (@name).
package sqltext

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"text/template"
)

// Parse parses every file of fsys matching the patterns into one set, each
// template named by its path, so that a file may use the blocks another
// defines. A field a template names that its data lacks is an error.
func Parse(fsys fs.FS, patterns ...string) (*template.Template, error) {
	all := template.New("").Option("missingkey=error")
	for _, pattern := range patterns {
		names, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", pattern, err)
		}
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", n, err)
			}
			if err := Check(n, string(b)); err != nil {
				return nil, err
			}
			if _, err := all.New(n).Parse(string(b)); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", n, err)
			}
		}
	}
	return all, nil
}

// Render executes the template name with data: the statement(s), without
// surrounding space or a final semicolon.
func Render(t *template.Template, name string, data any) (string, error) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return strings.TrimRight(strings.TrimSpace(b.String()), ";"), nil
}

var (
	// positional is a "?" outside comments and string literals: a
	// parameter bound by its place, which the files never use.
	positional = regexp.MustCompile(`\?`)
	// marker is a text marker meant for string replacement.
	marker = regexp.MustCompile(`/\*[A-Z][A-Z _]*\*/`)
)

// Check refuses SQL text that binds by position or holds a replacement
// marker: structure comes from template blocks and values from @name.
func Check(name, sql string) error {
	code := stripComments(sql)
	if m := marker.FindString(code); m != "" {
		return fmt.Errorf("%s holds the marker %s: use a template block", name, m)
	}
	if positional.MatchString(stripStrings(code)) {
		return fmt.Errorf("%s binds a value by position (?): bind it by name (@name)", name)
	}
	return nil
}

// stripComments drops "--" comments to the end of their line, outside
// string literals.
func stripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(sql, "\n") {
		inString := false
		cut := len(line)
		for i := 0; i < len(line); i++ {
			switch {
			case line[i] == '\\' && inString:
				i++
			case line[i] == '\'':
				inString = !inString
			case !inString && strings.HasPrefix(line[i:], "--"):
				cut = i
				i = len(line)
			}
		}
		b.WriteString(line[:cut])
		if cut < len(line) && strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// stripStrings drops the contents of string literals.
func stripStrings(sql string) string {
	var b strings.Builder
	inString := false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '\'':
			inString = !inString
			b.WriteByte(c)
		case !inString:
			b.WriteByte(c)
		}
	}
	return b.String()
}
