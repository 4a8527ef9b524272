package agent

import (
	"strings"

	"github.com/h3rum/h3rum/beacon"
)

// parseServerTiming reads the collector's Server-Timing metrics (the
// header's field values, in order) into a sample's ServerTiming, as the
// script's serverTiming does: each entry's first dur and desc through
// beacon's ReadMetric, which leaves out a value outside what the wire
// format accepts. Present is true when at least one metric was read.
func parseServerTiming(values []string) beacon.ServerTiming {
	st := beacon.NoServerTiming()
	for _, v := range values {
		for _, entry := range splitQuoted(v, ',') {
			params := splitQuoted(entry, ';')
			var dur, desc *string
			for _, p := range params[1:] {
				k, val, _ := strings.Cut(p, "=")
				val = unquote(strings.TrimSpace(val))
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "dur":
					if dur == nil {
						dur = &val
					}
				case "desc":
					if desc == nil {
						desc = &val
					}
				}
			}
			if st.ReadMetric(strings.TrimSpace(params[0]), dur, desc) {
				st.Present = true
			}
		}
	}
	return st
}

// splitQuoted splits s at sep outside double-quoted strings (a desc may
// be quoted and hold commas or semicolons).
func splitQuoted(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote returns a quoted-string's content, or s as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
