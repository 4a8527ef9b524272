package origin

import (
	"context"
	"log"
	"log/slog"
	"net/netip"
	"strings"
	"time"
)

// newErrorLog returns the log.Logger net/http writes its own errors to
// (failed TLS handshakes, malformed HTTP/2 prefaces, panics), sending them
// to h at level without what would identify or be chosen by a client: its
// IP address and port, and quoted strings such as a requested server name
// or protocol. "http: TLS handshake error from 192.0.2.1:50000: EOF"
// becomes "http: TLS handshake error from <addr>: EOF".
func newErrorLog(h slog.Handler, level slog.Level) *log.Logger {
	return log.New(&redactingWriter{h: h, level: level}, "", 0)
}

type redactingWriter struct {
	h     slog.Handler
	level slog.Level
}

func (w *redactingWriter) Write(b []byte) (int, error) {
	ctx := context.Background()
	if !w.h.Enabled(ctx, w.level) {
		return len(b), nil
	}
	msg := redact(strings.TrimSuffix(string(b), "\n"))
	return len(b), w.h.Handle(ctx, slog.NewRecord(time.Now(), w.level, msg, 0))
}

// Replacements for what redact takes out.
const (
	redactedAddr   = "<addr>"
	redactedString = `"<redacted>"`
)

// redact replaces every IP address, with or without port, and every
// double-quoted string in s. It errs on the side of removing: the
// server's own addresses go too.
func redact(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(redactedString)
			i = j + 1 // past the end when unterminated: the rest goes too
		case isAddrByte(c):
			j := i
			for j < len(s) && isAddrByte(s[j]) {
				j++
			}
			tok := s[i:j]
			// Punctuation may follow the address: "from 192.0.2.1:50000: EOF".
			n := len(tok)
			for n > 0 && !isIPAddr(tok[:n]) && (tok[n-1] == ':' || tok[n-1] == '.') {
				n--
			}
			if n > 0 && isIPAddr(tok[:n]) {
				b.WriteString(redactedAddr)
				b.WriteString(tok[n:])
			} else {
				b.WriteString(tok)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// isAddrByte reports whether c can be part of an IP address as Go prints
// one: IPv4, IPv6 in brackets with a port, a zone after %.
func isAddrByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '.' || c == ':' || c == '[' || c == ']' || c == '%' || c == '_'
}

func isIPAddr(s string) bool {
	if _, err := netip.ParseAddrPort(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return err == nil
}
