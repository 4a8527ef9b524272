package main

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"html"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/beacon"
)

// TestEmbed prints script tags and fetches their URLs from the handler
// the collector serves the script with: the URL must be accepted, carry
// the configuration asked for, and with --pin the integrity hash must be
// that of the bytes served.
func TestEmbed(t *testing.T) {
	mux := http.NewServeMux()
	(&beacon.Handler{}).Register(mux)
	base := []string{"embed", "--collector", "https://rumtest.example.com/", "--h3", "https://h3.rumtest.example.com",
		"--h2", "https://h2.rumtest.example.com:8443", "--site", "shop", "--sample", "0.05"}
	want := map[string]string{"h3": "https://h3.rumtest.example.com", "h2": "https://h2.rumtest.example.com:8443",
		"site": "shop", "sample": "0.05", "endpoint": "https://rumtest.example.com"}
	tagRE := regexp.MustCompile(`^<script async src="https://rumtest\.example\.com(/[^"?]+)\?([^"]+)"( integrity="([^"]+)" crossorigin="anonymous")?></script>\n$`)
	for _, tc := range []struct {
		name string
		args []string
		path string // the script's path in the tag
		want map[string]string
	}{
		{"follows upgrades", base, "/h3rum.js", want},
		{"pinned", append(base, "--pin"), "/" + beacon.ScriptName(), want},
		{"own endpoint, manual", append(base, "--endpoint", "https://ingest.example.com", "--trigger", "manual", "--pin"), "/" + beacon.ScriptName(),
			with(want, "endpoint", "https://ingest.example.com", "trigger", "manual")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), tc.args, &out, &errOut); err != nil {
				t.Fatalf("%v: %s", err, errOut.String())
			}
			m := tagRE.FindStringSubmatch(out.String())
			if m == nil || m[1] != tc.path {
				t.Fatalf("tag %q, want one for %s", out.String(), tc.path)
			}
			query := html.UnescapeString(m[2])
			cfg, err := beacon.ParseScriptConfig(query)
			if err != nil || !maps.Equal(cfg, tc.want) {
				t.Errorf("configuration %v (%v), want %v", cfg, err, tc.want)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", m[1]+"?"+query, nil))
			if rec.Code != 200 {
				t.Fatalf("the collector answers the tag's URL with %d: %s", rec.Code, rec.Body)
			}
			pinned := strings.Contains(strings.Join(tc.args, " "), "--pin")
			if pinned != (m[4] != "") {
				t.Fatalf("integrity %q with --pin %v", m[4], pinned)
			}
			if pinned {
				sum := sha512.Sum384(rec.Body.Bytes())
				if got := "sha384-" + base64.StdEncoding.EncodeToString(sum[:]); m[4] != got {
					t.Errorf("integrity %s, the served script's is %s", m[4], got)
				}
			}
		})
	}
}

// Without --collector the script comes from the H2 origin, which sends
// Alt-Svc: clear; from the H3 origin the tag is printed with a warning.
func TestEmbedScriptOrigin(t *testing.T) {
	args := []string{"embed", "--h3", "https://h3.rumtest.example.com", "--h2", "https://h2.rumtest.example.com", "--site", "shop"}
	for _, tc := range []struct {
		name    string
		args    []string
		src     string
		warning bool
	}{
		{"the H2 origin by default", args, `<script async src="https://h2.rumtest.example.com/h3rum.js?endpoint=https%3A%2F%2Fh2.rumtest.example.com&amp;`, false},
		{"another collector host", append(args, "--collector", "https://rum.example.com"), `<script async src="https://rum.example.com/h3rum.js?`, false},
		{"the H3 origin", append(args, "--collector", "https://h3.rumtest.example.com/"), `<script async src="https://h3.rumtest.example.com/h3rum.js?`, true},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), tc.args, &out, &errOut); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, errOut.String())
		}
		if !strings.HasPrefix(out.String(), tc.src) {
			t.Errorf("%s: tag %q, want it to start %q", tc.name, out.String(), tc.src)
		}
		if warned := strings.Contains(errOut.String(), "alt=2"); warned != tc.warning {
			t.Errorf("%s: stderr %q, want a warning: %v", tc.name, errOut.String(), tc.warning)
		}
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	m = maps.Clone(m)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Bad input: one line naming the flag, exit status 2, nothing printed.
func TestEmbedBadInput(t *testing.T) {
	ok := []string{"--collector", "https://rumtest.example.com", "--h3", "https://h3.example.com", "--h2", "https://h2.example.com"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--h3", "https://h3.example.com", "--h2", "h2.example.com"}, `--collector "h2.example.com": want the collector's origin`},
		{[]string{"--collector", "rumtest.example.com", "--h3", "https://h3.example.com", "--h2", "https://h2.example.com"}, `--collector "rumtest.example.com"`},
		{[]string{"--collector", "https://rumtest.example.com/h3rum.js", "--h3", "https://h3.example.com", "--h2", "https://h2.example.com"}, "want the collector's origin"},
		{[]string{"--collector", "https://rumtest.example.com", "--h3", "https://h3.example.com"}, "--h3 and --h2 are required"},
		{append(ok, "--sample", "5%"), `--sample="5%": want a fraction from 0 to 1`},
		{append(ok, "--h2", "h2.example.com"), `--h2="h2.example.com": want an origin`},
		{append(ok, "--site", "my shop"), `--site="my shop": want 1 to 64`},
		{append(ok, "--parallel", "50"), `--parallel="50": want an integer from 1 to 20`},
		{append(ok, "--bogus"), "flag provided but not defined"},
	} {
		var out, errOut bytes.Buffer
		code := exitCode(run(context.Background(), append([]string{"embed"}, tc.args...), &out, &errOut), &errOut)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), tc.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
}
