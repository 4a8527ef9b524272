package access

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Token is a secret a client presents as "Authorization: Bearer <token>".
// The empty Token matches nothing.
type Token string

// Matches reports, in constant time, whether got is the token.
func (t Token) Matches(got string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(got), []byte(t)) == 1
}

// Bearer returns the token of r's Authorization header. present is false
// when r has no such header; a header of another scheme gives "", true.
func Bearer(r *http.Request) (token string, present bool) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(tok), true
}

// MaxTokenFileBytes bounds a token file: a token is tens of bytes.
const MaxTokenFileBytes = 4096

// ReadTokenFile returns the token kept in the file at path, without the
// white space around it (its trailing newline). A token on a command line
// is visible to every local user (ps), so files are the way to give one;
// the file is refused when others may read or write it or its group may
// write it. Its owner is not checked, and its group may read it: a secret
// that root owns reaches a service through the service's group (root:h3rum
// 0640), and systemd's LoadCredential= gives the service its own 0400 copy.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if m := fi.Mode().Perm(); m&0o027 != 0 {
		who := "others may read or write it"
		if m&0o007 == 0 {
			who = "its group may write it"
		}
		return "", fmt.Errorf("refusing %s: %s (mode %04o); make it readable by its owner and group only (chmod 0640 or 0600)", path, who, m)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("reading %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > MaxTokenFileBytes {
		return "", fmt.Errorf("reading %s: longer than %d bytes; a token file holds one token", path, MaxTokenFileBytes)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("reading %s: it is empty", path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("reading %s: it holds more than one line; a token file holds one token", path)
	}
	return tok, nil
}

// TokenSource is a bearer token as a command line gives it: the token
// itself or the file holding it, one of the two. Flag and Env are how
// messages name the setting: the token is --Flag or Env, its file
// --Flag-file or Env_FILE.
type TokenSource struct {
	Flag, Env   string
	Token, File string
	// MinBytes is the shortest token accepted; 0: any.
	MinBytes int
}

// Resolve returns the token: Token, or the one ReadTokenFile reads from
// File. Giving both is an error, and so is a token shorter than MinBytes,
// named by where it came from. On an error the token is "".
func (s TokenSource) Resolve() (string, error) {
	what, tok := "--"+s.Flag, s.Token
	if s.File != "" {
		if s.Token != "" {
			return "", fmt.Errorf("give --%s or --%s-file, not both (%s and %s_FILE count too)", s.Flag, s.Flag, s.Env, s.Env)
		}
		t, err := ReadTokenFile(s.File)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", s.Flag, err)
		}
		what, tok = fmt.Sprintf("the token in --%s-file %s", s.Flag, s.File), t
	}
	if tok != "" && len(tok) < s.MinBytes {
		return "", fmt.Errorf("%s is %d bytes; use at least %d (e.g. openssl rand -hex 32)", what, len(tok), s.MinBytes)
	}
	return tok, nil
}
