package access

import (
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBearerAndMatches(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, header string
		present, ok  bool
	}{
		{"none", "", false, false},
		{"bearer", "Bearer " + secret, true, true},
		{"case-insensitive scheme, padded", "bearer   " + secret + " ", true, true},
		{"wrong token", "Bearer x" + secret, true, false},
		{"other scheme", "Basic " + secret, true, false},
		{"scheme only", "Bearer", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			tok, present := Bearer(r)
			if present != tc.present {
				t.Errorf("present = %v, want %v", present, tc.present)
			}
			if got := Token(secret).Matches(tok); got != tc.ok {
				t.Errorf("Matches(%q) = %v, want %v", tok, got, tc.ok)
			}
		})
	}
	if Token("").Matches("") {
		t.Error("the empty token matched the empty string")
	}
}

// A token file gives its one line without the white space around it, and
// is refused when others may read or write it or its group may write it,
// when it is empty or holds several lines.
func TestReadTokenFile(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name    string
		content string
		mode    fs.FileMode
		want    string // the token, or with err the error's text
		err     bool
	}{
		{"trailing newline", secret + "\n", 0o600, secret, false},
		{"CRLF and spaces", "  " + secret + " \r\n", 0o400, secret, false},
		{"no newline", secret, 0o640, secret, false},
		{"group may read", secret + "\n", 0o440, secret, false},
		{"others may read", secret + "\n", 0o644, "others may read or write it (mode 0644)", true},
		{"others may write", secret + "\n", 0o602, "others may read or write it (mode 0602)", true},
		{"group may write", secret + "\n", 0o660, "its group may write it (mode 0660)", true},
		{"empty", "\n", 0o600, "it is empty", true},
		{"two lines", secret + "\n" + secret + "\n", 0o600, "more than one line", true},
		{"too long", strings.Repeat("x", MaxTokenFileBytes+1), 0o600, "longer than 4096 bytes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report-token")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			got, err := ReadTokenFile(path)
			switch {
			case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path)):
				t.Errorf("ReadTokenFile = %q, %v; want an error naming %s and %q", got, err, path, tc.want)
			case !tc.err && (err != nil || got != tc.want):
				t.Errorf("ReadTokenFile = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := ReadTokenFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := ReadTokenFile(t.TempDir()); err == nil {
		t.Error("a directory was read as a token file")
	}
}

// A token source gives its token or its file's, never both, and names
// where a short token came from.
func TestTokenSourceResolve(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	file := func(name, content string, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, short, readable := file("good", secret+"\n", 0o600), file("short", "s3cret\n", 0o600), file("readable", secret, 0o644)
	for _, tc := range []struct {
		name        string
		token, file string
		min         int
		want        string // the token, or with err the error's text
		err         bool
	}{
		{"none", "", "", 32, "", false},
		{"token", secret, "", 32, secret, false},
		{"file", "", good, 32, secret, false},
		{"short token, no minimum", "s3cret", "", 0, "s3cret", false},
		{"both", secret, good, 0, "give --agent-token or --agent-token-file, not both (H3RUM_AGENT_TOKEN and H3RUM_AGENT_TOKEN_FILE count too)", true},
		{"short token", "s3cret", "", 32, "--agent-token is 6 bytes; use at least 32", true},
		{"short token in a file", "", short, 32, "the token in --agent-token-file " + short + " is 6 bytes", true},
		{"file others may read", "", readable, 0, "--agent-token-file: refusing " + readable, true},
		{"missing file", "", filepath.Join(dir, "missing"), 0, "--agent-token-file: open ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TokenSource{Flag: "agent-token", Env: "H3RUM_AGENT_TOKEN", Token: tc.token, File: tc.file, MinBytes: tc.min}.Resolve()
			switch {
			case tc.err && (err == nil || got != "" || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Resolve = %q, %v; want \"\" and an error naming %q", got, err, tc.want)
			case !tc.err && (err != nil || got != tc.want):
				t.Errorf("Resolve = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
