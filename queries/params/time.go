package params

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/h3rum/h3rum/queries/model"
)

// ParseTime reads a report time: "" (zero: the default), "now", a
// duration before now ("24h", "90m", "7d", "2w", "1d12h"), an RFC 3339
// time, "2006-01-02T15:04:05" or "2006-01-02 15:04" (UTC), or a date
// "2006-01-02" (UTC midnight).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return time.Time{}, nil
	case "now":
		return now, nil
	}
	if d, ok := parseAgo(s); ok {
		if d < 0 {
			return time.Time{}, model.InvalidOptions("duration %q must not be negative", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, model.InvalidOptions("cannot parse time %q (want a duration like 24h or 7d, RFC 3339, or 2006-01-02)", s)
}

// maxAgo is the longest duration a report time may be before now, each
// unit of it alone: a window must lie after 1970 anyway (Validate), and a
// Duration holds at most 292 years.
const maxAgo = 200 * 365 * 24 * time.Hour

// isAgo reports whether s is a duration before now, as ParseTime reads it.
func isAgo(s string) bool {
	_, ok := parseAgo(s)
	return ok
}

// parseAgo reads a Go duration extended with d (24 h) and w (7 d) units.
func parseAgo(s string) (time.Duration, bool) {
	var total time.Duration
	rest := s
	neg := strings.HasPrefix(rest, "-")
	rest = strings.TrimPrefix(rest, "-")
	// Peel off leading "<n>w" and "<n>d" parts; the remainder is a Go duration.
	for _, unit := range []struct {
		suffix string
		d      time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(rest, unit.suffix)
		if i <= 0 {
			continue
		}
		// Bounded before the conversion to a Duration, which is not
		// defined for values out of its range (NaN, 1e5 weeks).
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || !(n >= 0 && n <= float64(maxAgo/unit.d)) {
			return 0, false
		}
		total += time.Duration(n * float64(unit.d))
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, false
		}
		total += d
	} else if total == 0 && s != "0d" && s != "0w" {
		return 0, false
	}
	if neg {
		total = -total
	}
	return total, true
}

// BaselineWindow reads a comparison's baseline window for the validated
// options o: since and until as ParseTime reads them; an empty until is
// the start of o's window, an empty since the same length before until.
func BaselineWindow(o model.Options, since, until string, now time.Time) (time.Time, time.Time, error) {
	var bs, bu time.Time
	var err error
	if until == "" {
		bu = o.Since
	} else if bu, err = ParseTime(until, now); err != nil {
		return bs, bu, fmt.Errorf("%w: baseline_until: %v", model.ErrInvalidOptions, err)
	}
	if since == "" {
		bs = bu.Add(-o.Until.Sub(o.Since))
	} else if bs, err = ParseTime(since, now); err != nil {
		return bs, bu, fmt.Errorf("%w: baseline_since: %v", model.ErrInvalidOptions, err)
	}
	if !bs.Before(bu) {
		return bs, bu, fmt.Errorf("%w: the baseline window [%s, %s) is empty", model.ErrInvalidOptions, bs.Format(time.RFC3339), bu.Format(time.RFC3339))
	}
	return bs, bu, nil
}
