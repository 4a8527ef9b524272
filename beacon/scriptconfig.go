package beacon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
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

// ScriptParam is one parameter a script URL may carry: a data-* attribute
// of PROTOCOL.md without the prefix, with what it means. PROTOCOL.md's
// embedding table is written from these (go generate ./beacon), and
// `h3rum embed -h` prints them (Usage).
type ScriptParam struct {
	Name string
	// Meaning and Default are PROTOCOL.md's cells (Markdown): what the
	// value means, and what the script does without it ("required" when
	// it does not run).
	Meaning, Default string
	check            func(string) error // as the script reads it
	// An integer parameter's range and default, which the script's build
	// receives (ScriptDefine); hi is 0 for the others.
	lo, hi, def int
	// design marks an integer parameter that changes what a run measures:
	// the script reports its value back in par under the parameter's own
	// name, and runs that differ in it are kept apart (Params.Extra).
	// parallel, warmup and bytes are reported too, as n, w and b, each in
	// a field of its own.
	design bool
}

// Usage is the parameter's help line: its meaning and default as plain
// text.
func (p ScriptParam) Usage() string {
	plain := strings.NewReplacer("`", "").Replace
	if p.Default == "required" {
		return plain(p.Meaning) + " (required)"
	}
	return fmt.Sprintf("%s (default %s)", plain(p.Meaning), plain(p.Default))
}

// scriptParamList are the embedding's parameters, in the order PROTOCOL.md
// and `h3rum embed -h` list them, each checked as the script reads it, so
// that a URL that would silently fall back to a default is refused instead.
var scriptParamList = []ScriptParam{
	{Name: "h3", Meaning: "origin serving `/probe` over TCP with `Alt-Svc: h3` and over QUIC", Default: "required", check: checkURLOrigin},
	{Name: "h2", Meaning: "TCP-only origin serving `/probe` (`Alt-Svc: clear`), on another host name", Default: "required", check: checkURLOrigin},
	{Name: "site", Meaning: fmt.Sprintf("site id; the collector's `--sites` allowlist decides; `[A-Za-z0-9._-]{1,%d}`", maxSiteLen), Default: "the page's host name", check: func(v string) error {
		if v == "" || len(v) > maxSiteLen || strings.IndexFunc(v, func(c rune) bool { return !isSiteChar(c) }) >= 0 {
			return fmt.Errorf("want 1 to %d of A-Z a-z 0-9 . _ -", maxSiteLen)
		}
		return nil
	}},
	{Name: "sample", Meaning: "fraction of page loads that run the test, 0 to 1", Default: "`1`", check: func(v string) error {
		// Decimal only: Go parses 0x1p-2 and Inf, the script's +v does not.
		if x, err := strconv.ParseFloat(v, 64); err != nil || strings.Trim(v, "0123456789.eE+-") != "" || x < 0 || x > 1 {
			return errors.New("want a fraction from 0 to 1")
		}
		return nil
	}},
	intParam("parallel", "requests per parallel batch", 1, MaxParallel, DefaultParallel, ""),
	intParam("warmup", "sequential warm-up requests to the H3 origin", 0, MaxWarmup, DefaultWarmup, ""),
	intParam("bytes", "probe body size (`/probe?bytes=N`)", 0, MaxBytes, 0, "(the collector caps it lower)"),
	{Name: "trigger", Meaning: "`load`, or `manual`: the page calls `h3rum.run()` (e.g. after a search finishes)", Default: "`load`", check: checkEnum("load", "manual")},
	{Name: "endpoint", Meaning: "origin that receives reports at `<origin>/beacon`", Default: "the script's origin", check: checkURLOrigin},
	{Name: "order", Meaning: "`random`, or `h2first` (what Dropbox did; biased, for comparison only)", Default: "`random`", check: checkEnum("random", "h2first")},
	{Name: "consent", Meaning: "`wait`: nothing happens until the page calls `h3rum.consent()` (PROTOCOL.md, \"Consent\")", Default: "none", check: checkEnum("wait")},
}

// The integer parameters a report's "par" carries back, whose ranges the
// decoder checks "n", "w" and "b" against: the embedding declares a range
// once, for the URL check, the script and the wire alike.
var (
	parallelParam = scriptParam("parallel")
	warmupParam   = scriptParam("warmup")
	bytesParam    = scriptParam("bytes")
)

// scriptParam is the parameter called name; a name the list lacks stops
// the package from loading, so every test fails on it.
func scriptParam(name string) ScriptParam {
	return scriptParamList[slices.IndexFunc(scriptParamList, func(p ScriptParam) bool { return p.Name == name })]
}

// ScriptParams returns the parameters a script URL may carry, in order.
func ScriptParams() []ScriptParam { return slices.Clone(scriptParamList) }

// scriptParams checks each parameter by name.
var scriptParams = func() map[string]func(string) error {
	m := make(map[string]func(string) error, len(scriptParamList))
	for _, p := range scriptParamList {
		m[p.Name] = p.check
	}
	return m
}()

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

// intParam is an integer parameter from lo to hi, def when not given;
// note follows its range in the meaning.
func intParam(name, what string, lo, hi, def int, note string) ScriptParam {
	meaning := fmt.Sprintf("%s, %d to %s", what, lo, sizeText(hi))
	if note != "" {
		meaning += " " + note
	}
	return ScriptParam{
		Name:    name,
		Meaning: meaning,
		Default: fmt.Sprintf("`%d`", def),
		check:   checkInt(lo, hi),
		lo:      lo, hi: hi, def: def,
	}
}

// designParam is an integer parameter of the design (ScriptParam.design):
// a new one needs its line in scriptParamList and its reading in the
// script (src/core.js, src/h3rum.js), and the collector checks, stores and
// re-encodes it by its name.
func designParam(name, what string, lo, hi, def int, note string) ScriptParam {
	p := intParam(name, what, lo, hi, def, note)
	p.design = true
	return p
}

// designIndex returns the design parameter called name and its place among
// the design parameters, or -1. It scans scriptParamList, a dozen entries,
// on each call, so that a parameter added to the list (as tests do) is
// known at once.
func designIndex(name string) (ScriptParam, int) {
	k := 0
	for _, p := range scriptParamList {
		if !p.design {
			continue
		}
		if p.Name == name {
			return p, k
		}
		k++
	}
	return ScriptParam{}, -1
}

// sizeText writes n as PROTOCOL.md does: a whole number of MiB as such
// (16 MiB), anything else in digits.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return strconv.Itoa(n)
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
	// gzip only: brotli saves a few bytes for far more CPU, too dear for a
	// public URL whose every new query costs one compression.
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
