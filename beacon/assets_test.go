package beacon

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/h3rum/h3rum/beacon/internal/jsbuild"
)

// TestDistFresh rebuilds the script in memory and fails when dist/ is not
// what go generate ./beacon would write now.
func TestDistFresh(t *testing.T) {
	out, err := jsbuild.Build("src/h3rum.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.JS, []byte(scriptJS)) {
		t.Fatal("dist/h3rum.js is stale: run go generate ./beacon")
	}
	// Compressed forms are checked by content, not bytes, so that a new
	// compressor version alone does not fail the build.
	if got := gunzip(t, []byte(scriptGzip)); got != scriptJS {
		t.Error("dist/h3rum.js.gz does not decompress to dist/h3rum.js: run go generate ./beacon")
	}
	if got := unbrotli(t, []byte(scriptBrotli)); got != scriptJS {
		t.Error("dist/h3rum.js.br does not decompress to dist/h3rum.js: run go generate ./beacon")
	}
}

// TestScriptSize holds the budget: minified and gzipped h3rum.js ≤ 2,048 bytes.
func TestScriptSize(t *testing.T) {
	t.Logf("h3rum.js: %d bytes minified, %d gzip, %d brotli", len(scriptJS), len(scriptGzip), len(scriptBrotli))
	if len(scriptGzip) > 2048 {
		t.Errorf("gzipped script is %d bytes, budget 2048", len(scriptGzip))
	}
	// The script must stay eval-free and leak no global but window.h3rum.
	for _, bad := range []string{"eval(", "new Function", "innerHTML", "document.write"} {
		if strings.Contains(scriptJS, bad) {
			t.Errorf("script contains %q", bad)
		}
	}
	if !strings.HasPrefix(scriptJS, jsbuild.CompileHint+`"use strict";(()=>{`) || !strings.HasSuffix(strings.TrimSpace(scriptJS), "})();") {
		t.Errorf("script is not the compile hint and one strict IIFE: %.60q…%.20s", scriptJS, scriptJS[len(scriptJS)-20:])
	}
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func unbrotli(t *testing.T, b []byte) string {
	t.Helper()
	out, err := io.ReadAll(brotli.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestHandlerScript(t *testing.T) {
	h := &Handler{}
	mux := http.NewServeMux()
	h.Register(mux)
	hashed := "/" + ScriptName()
	if !regexp.MustCompile(`^/h3rum\.[0-9a-f]{12}\.js$`).MatchString(hashed) {
		t.Fatalf("script name %q", hashed)
	}
	tests := []struct {
		name, method, path, accept string
		status                     int
		encoding, cache            string
	}{
		{"plain", "GET", "/h3rum.js", "", 200, "", shortCache},
		{"gzip", "GET", "/h3rum.js", "gzip, deflate", 200, "gzip", shortCache},
		{"brotli preferred", "GET", "/h3rum.js", "gzip, deflate, br, zstd", 200, "br", shortCache},
		{"brotli refused", "GET", "/h3rum.js", "br;q=0, gzip;q=0.5", 200, "gzip", shortCache},
		{"all refused", "GET", "/h3rum.js", "br;q=0.0, gzip;q=0", 200, "", shortCache},
		{"hashed", "GET", hashed, "br", 200, "br", immutableCache},
		{"head", "HEAD", hashed, "gzip", 200, "gzip", immutableCache},
		{"old hash", "GET", "/h3rum.000000000000.js", "", 404, "", ""},
		{"post", "POST", "/h3rum.js", "", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept-Encoding", tt.accept)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status != 200 {
				return
			}
			hd := res.Header
			for k, want := range map[string]string{
				"Content-Encoding": tt.encoding, "Cache-Control": tt.cache, "Vary": "Accept-Encoding",
				"Content-Type": "text/javascript; charset=utf-8", "Cross-Origin-Resource-Policy": "cross-origin",
			} {
				if got := hd.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if !regexp.MustCompile(`^"[0-9a-f]{12}(\.br|\.gz)?"$`).MatchString(hd.Get("ETag")) {
				t.Errorf("ETag %q", hd.Get("ETag"))
			}
			body := rec.Body.Bytes()
			if tt.method == "HEAD" {
				if len(body) != 0 {
					t.Errorf("HEAD returned %d bytes", len(body))
				}
				return
			}
			var js string
			switch tt.encoding {
			case "br":
				js = unbrotli(t, body)
			case "gzip":
				js = gunzip(t, body)
			default:
				js = string(body)
			}
			if js != scriptJS {
				t.Errorf("body (%d bytes, %s) is not the script", len(body), tt.encoding)
			}
			// Conditional request with the ETag just received.
			req.Header.Set("If-None-Match", hd.Get("ETag"))
			rec = httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotModified {
				t.Errorf("If-None-Match: status %d, want 304", rec.Code)
			}
		})
	}
}

func TestHandlerDemo(t *testing.T) {
	h := &Handler{H3Origin: "https://h3.example.com", H2Origin: "https://h2.example.com:8443", Site: `shop"><b>`}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/demo", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	page := rec.Body.String()
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'",
		"connect-src 'self' https://h3.example.com https://h2.example.com:8443"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	tag := regexp.MustCompile(`<script async src="/(h3rum\.[0-9a-f]{12}\.js)" data-h3="https://h3.example.com" ` +
		`data-h2="https://h2.example.com:8443" data-site="shop&#34;&gt;&lt;b&gt;" data-sample="1"></script>`).FindStringSubmatch(page)
	if tag == nil || tag[1] != ScriptName() {
		t.Errorf("demo page lacks the script tag:\n%s", page)
	}
	// Strict CSP: every script has a src, nothing inline.
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(m, ` src="/`) {
			t.Errorf("inline or foreign script %s", m)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/demo.js", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "h3rum:report") ||
		rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("demo.js: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}

	// Not configured: no script tag, an explanation instead.
	rec = httptest.NewRecorder()
	(&Handler{}).ServeHTTP(rec, httptest.NewRequest("GET", "/demo", nil))
	if rec.Code != 200 || strings.Contains(rec.Body.String(), "data-h3") || !strings.Contains(rec.Body.String(), "unconfigured") {
		t.Errorf("unconfigured demo: %d\n%s", rec.Code, rec.Body.String())
	}
}

// TestScriptSourceHasNoModuleSyntaxLeft guards the bundle: an import left
// in dist would break every embedding page.
func TestScriptSourceHasNoModuleSyntaxLeft(t *testing.T) {
	src, err := os.ReadFile("src/h3rum.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "from './core.js'") {
		t.Fatal("src/h3rum.js no longer imports core.js: update this test")
	}
	if strings.Contains(scriptJS, "import ") || strings.Contains(scriptJS, "export ") {
		t.Error("dist/h3rum.js contains module syntax")
	}
}
