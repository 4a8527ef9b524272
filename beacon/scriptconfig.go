package beacon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/h3rum/h3rum/beacon/internal/precompress"
)

// configSlot is the string literal the built script holds where the
// collector writes a configuration (src/h3rum.js, K);
// TestHandlerConfiguredScript checks that it occurs exactly once.
const configSlot = `"{config}"`

// Limits of a configured script URL.
const (
	maxConfigQuery   = 1024 // bytes of query string
	maxCachedScripts = 256  // configured scripts kept compressed
)

var errQueryTooLong = fmt.Errorf("query longer than %d bytes", maxConfigQuery)

// scriptParams are the embedding's parameters a script URL may carry: the
// data-* attributes of PROTOCOL.md without the prefix, each checked as the
// script reads it, so that a URL that would silently fall back to a
// default is refused instead.
var scriptParams = map[string]func(string) error{
	"h3":       checkURLOrigin,
	"h2":       checkURLOrigin,
	"endpoint": checkURLOrigin,
	"site": func(v string) error {
		if v == "" || len(v) > maxSiteLen || strings.IndexFunc(v, func(c rune) bool { return !isSiteChar(c) }) >= 0 {
			return fmt.Errorf("want 1 to %d of A-Z a-z 0-9 . _ -", maxSiteLen)
		}
		return nil
	},
	"sample": func(v string) error {
		// Decimal only: Go parses 0x1p-2 and Inf, the script's +v does not.
		if x, err := strconv.ParseFloat(v, 64); err != nil || strings.Trim(v, "0123456789.eE+-") != "" || x < 0 || x > 1 {
			return errors.New("want a fraction from 0 to 1")
		}
		return nil
	},
	"parallel": checkInt(1, 20),
	"warmup":   checkInt(0, 10),
	"bytes":    checkInt(0, 1<<24),
	"trigger":  checkEnum("load", "manual"),
	"order":    checkEnum("random", "h2first"),
	"consent":  checkEnum("wait"),
}

// checkURLOrigin accepts an http(s) origin as the script reads it. Its
// bytes must be UTF-8: the configuration is written into the script as
// JSON, which would turn other bytes into U+FFFD, another origin.
func checkURLOrigin(v string) error {
	u, err := url.Parse(v)
	if err != nil || !utf8.ValidString(v) || (u.Scheme != "https" && u.Scheme != "http") || !strings.HasPrefix(v, u.Scheme+"://") ||
		u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an origin, e.g. https://h3.rumtest.example.com")
	}
	return nil
}

func checkInt(lo, hi int) func(string) error {
	return func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		return nil
	}
}

func checkEnum(values ...string) func(string) error {
	return func(v string) error {
		for _, x := range values {
			if v == x {
				return nil
			}
		}
		return fmt.Errorf("want %s", strings.Join(values, " or "))
	}
}

// ParseScriptConfig reads the configuration a script URL's query carries.
// It returns nil, nil when the query names none of the parameters (a site's
// own cache-busting ?v=2, well-formed or not, keeps working as before);
// otherwise every parameter must be known, given once, valid, and h3 and h2
// must be there.
func ParseScriptConfig(rawQuery string) (map[string]string, error) {
	if rawQuery == "" {
		return nil, nil
	}
	// ParseQuery keeps every pair it could read: a query that names none of
	// the parameters is not a configuration, even when it is malformed or
	// long (the server's header limit bounds it).
	q, err := url.ParseQuery(rawQuery)
	known := false
	for k := range q {
		if _, ok := scriptParams[k]; ok {
			known = true
		}
	}
	if !known {
		return nil, nil
	}
	if len(rawQuery) > maxConfigQuery {
		return nil, errQueryTooLong
	}
	if err != nil {
		return nil, fmt.Errorf("parsing query: %w", err)
	}
	cfg := make(map[string]string, len(q))
	for k, vs := range q {
		check, ok := scriptParams[k]
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown parameter %q", k)
		case len(vs) != 1:
			return nil, fmt.Errorf("parameter %s given %d times", k, len(vs))
		}
		if err := check(vs[0]); err != nil {
			return nil, fmt.Errorf("parameter %s=%q: %w", k, vs[0], err)
		}
		cfg[k] = vs[0]
	}
	if cfg["h3"] == "" || cfg["h2"] == "" {
		return nil, errors.New("a configured script needs both h3 and h2")
	}
	return cfg, nil
}

// script is one servable form of the script; brotli "" means none.
type script struct {
	js, gzip, brotli string
	hash             string // content hash, the ETag's base
}

// scriptCache keeps the configured scripts served recently, compressed,
// up to maxCachedScripts; beyond that an arbitrary one is dropped, so a
// client cycling through configurations costs compression, not memory.
type scriptCache struct {
	mu sync.Mutex
	m  map[string]*script
}

// ConfiguredScript returns the script as the collector serves it for a
// URL carrying cfg (from ParseScriptConfig): the bytes a Subresource
// Integrity hash of that URL must match.
func ConfiguredScript(cfg map[string]string) (string, error) {
	lit, err := configLiteral(cfg)
	if err != nil {
		return "", err
	}
	return withConfig(lit)
}

// configLiteral is cfg as one canonical JavaScript object literal:
// encoding/json sorts the keys and escapes <, >, & and U+2028/9.
func configLiteral(cfg map[string]string) (string, error) {
	lit, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encoding configuration: %w", err)
	}
	return string(lit), nil
}

func withConfig(lit string) (string, error) {
	if strings.Count(scriptJS, configSlot) != 1 {
		return "", errors.New("the built script has no configuration slot")
	}
	return strings.Replace(scriptJS, configSlot, lit, 1), nil
}

func (c *scriptCache) get(cfg map[string]string) (*script, error) {
	key, err := configLiteral(cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	sc := c.m[key]
	c.mu.Unlock()
	if sc != nil {
		return sc, nil
	}
	js, err := withConfig(key)
	if err != nil {
		return nil, err
	}
	// gzip only: at its best level it takes 0.35 ms here, brotli's best
	// 25 ms (its level 5 still 1.8 ms) for 10 % fewer bytes, too dear for
	// a public URL whose every new query costs one compression.
	gz, err := precompress.Gzip([]byte(js))
	if err != nil {
		return nil, err
	}
	sc = &script{js: js, gzip: string(gz), hash: contentHash(js)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*script)
	}
	if len(c.m) >= maxCachedScripts {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = sc
	return sc, nil
}
