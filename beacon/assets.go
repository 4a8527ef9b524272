package beacon

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the script and the demo page
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The built script is committed together with its gzip and brotli forms
// (go generate ./beacon writes all three; TestDistFresh fails when they
// are stale), so serving costs no compression work and no start-up time.
// Strings keep the embedded bytes immutable.
var (
	//go:embed dist/h3rum.js
	scriptJS string
	//go:embed dist/h3rum.js.gz
	scriptGzip string
	//go:embed dist/h3rum.js.br
	scriptBrotli string
	//go:embed demo/demo.html
	demoHTML string
	//go:embed demo/demo.js
	demoJS string
)

// Cache lifetimes of the script.
const (
	shortCache     = "public, max-age=300"
	immutableCache = "public, max-age=31536000, immutable"
)

// Script returns the built h3rum.js (minified).
func Script() []byte { return []byte(scriptJS) }

// ScriptName is the content-addressed file name of the script,
// "h3rum.<12 hex digits>.js", served with a one-year immutable cache.
func ScriptName() string { return "h3rum." + contentHash(scriptJS) + ".js" }

func contentHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// Handler serves the beacon script and the demo page:
//
//	GET /h3rum.js               the script, cached 5 minutes
//	GET /h3rum.<hash>.js        the same bytes, cached one year (ScriptName)
//	GET /demo, GET /demo.js     a page that runs the test against this collector
//
// Either script URL may carry the embedding's configuration,
// /h3rum.js?h3=…&h2=…&site=shop&sample=0.05 (ParseScriptConfig): the script
// is then served with it written in, and never reads its element.
// Scripts are served brotli- (the plain script only) or gzip-encoded when
// the client accepts it.
// The zero value serves the script; the demo needs H3Origin and H2Origin.
type Handler struct {
	// H3Origin is the origin with Alt-Svc: h3 the demo measures,
	// e.g. "https://h3.rumtest.example.com". Empty: the demo explains it
	// is not configured.
	H3Origin string
	// H2Origin is the TCP-only origin the demo measures.
	H2Origin string
	// Site is the demo's data-site; empty means "demo".
	Site string
	// Endpoint is the demo's data-endpoint (an origin); empty means reports
	// go to the origin that served the script, i.e. this collector.
	Endpoint string

	once       sync.Once
	mux        *http.ServeMux
	hash       string
	demo       *template.Template
	demoErr    error
	plain      *script // as built: data-* attributes configure it
	configured scriptCache
}

// Register adds the handler's routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, p := range h.Patterns() {
		mux.Handle(p, h)
	}
}

// Patterns are the ServeMux patterns the handler answers.
func (h *Handler) Patterns() []string {
	return []string{"GET /h3rum.js", "GET /" + ScriptName(), "GET /demo", "GET /demo.js"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.init)
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) init() {
	h.hash = contentHash(scriptJS)
	h.plain = &script{js: scriptJS, gzip: scriptGzip, brotli: scriptBrotli, hash: h.hash}
	h.demo, h.demoErr = template.New("demo").Parse(demoHTML)
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /h3rum.js", func(w http.ResponseWriter, r *http.Request) { h.serveScript(w, r, shortCache) })
	h.mux.HandleFunc("GET /h3rum."+h.hash+".js", func(w http.ResponseWriter, r *http.Request) {
		h.serveScript(w, r, immutableCache)
	})
	h.mux.HandleFunc("GET /demo", h.serveDemo)
	h.mux.HandleFunc("GET /demo.js", h.serveDemoJS)
}

func (h *Handler) serveScript(w http.ResponseWriter, r *http.Request, cache string) {
	sc := h.plain
	if cfg, err := ParseScriptConfig(r.URL.RawQuery); err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errQueryTooLong) {
			status = http.StatusRequestURITooLong
		}
		http.Error(w, "h3rum.js: "+err.Error(), status)
		return
	} else if cfg != nil {
		if sc, err = h.configured.get(cfg); err != nil {
			http.Error(w, "h3rum.js: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	hd := w.Header()
	body, etag := sc.js, sc.hash
	switch enc := r.Header.Values("Accept-Encoding"); {
	case sc.brotli != "" && accepts(enc, "br"):
		body, etag = sc.brotli, etag+".br"
		hd.Set("Content-Encoding", "br")
	case accepts(enc, "gzip"):
		body, etag = sc.gzip, etag+".gz"
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Type", "text/javascript; charset=utf-8")
	hd.Set("Cache-Control", cache)
	hd.Set("Vary", "Accept-Encoding")
	hd.Set("ETag", `"`+etag+`"`)
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	// Lets sites load the script with <script crossorigin integrity=…>.
	hd.Set("Access-Control-Allow-Origin", "*")
	// Lets the script read its own entry's protocol on any page: a public
	// file's timing tells a page nothing new, and "alt" needs it.
	hd.Set("Timing-Allow-Origin", "*")
	hd.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
}

// accepts reports whether an Accept-Encoding header lists coding with a
// non-zero q-value.
func accepts(header []string, coding string) bool {
	for _, h := range header {
		for _, part := range strings.Split(h, ",") {
			name, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(name), coding) {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			if q == "q=0" || strings.HasPrefix(q, "q=0.") && strings.Trim(q[4:], "0") == "" {
				return false
			}
			return true
		}
	}
	return false
}

func (h *Handler) serveDemo(w http.ResponseWriter, r *http.Request) {
	site := h.Site
	if site == "" {
		site = "demo"
	}
	connect := []string{"'self'"}
	for _, o := range []string{h.H3Origin, h.H2Origin, h.Endpoint} {
		if o != "" && !strings.ContainsAny(o, " ;,'\"") {
			connect = append(connect, o)
		}
	}
	if h.demoErr != nil {
		http.Error(w, "parsing demo template: "+h.demoErr.Error(), http.StatusInternalServerError)
		return
	}
	// The demo embeds the script as recommended: configured by its URL.
	data := map[string]string{"H3": h.H3Origin, "H2": h.H2Origin}
	if h.H3Origin != "" && h.H2Origin != "" {
		q := url.Values{"h3": {h.H3Origin}, "h2": {h.H2Origin}, "site": {site}, "sample": {"1"}}
		if h.Endpoint != "" {
			q.Set("endpoint", h.Endpoint)
		}
		if _, err := ParseScriptConfig(q.Encode()); err != nil {
			data["Problem"] = err.Error()
		} else {
			data["Script"] = "/h3rum." + h.hash + ".js?" + q.Encode()
		}
	}
	var buf bytes.Buffer
	err := h.demo.Execute(&buf, data)
	if err != nil {
		http.Error(w, "rendering demo: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src "+strings.Join(connect, " ")+
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

func (h *Handler) serveDemoJS(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", "text/javascript; charset=utf-8")
	hd.Set("Cache-Control", shortCache)
	hd.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(demoJS))
}
