package beacon

import "strings"

// MaxCollectorID is the longest collector id.
const MaxCollectorID = 32

// ValidCollectorID reports whether id may name a collector (its POP, e.g.
// "fra-1"): 1 to MaxCollectorID lower-case letters, digits and hyphens.
func ValidCollectorID(id string) bool {
	if id == "" || len(id) > MaxCollectorID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// CollectorOf is the collector named in a server connection id (the cid
// of Server-Timing): a probe origin with a collector id prefixes its
// connection ids with "<collector-id>.". "" when the id names none, or
// not a valid one.
func CollectorOf(connID string) string {
	i := strings.IndexByte(connID, '.')
	if i <= 0 || !ValidCollectorID(connID[:i]) {
		return ""
	}
	return connID[:i]
}
