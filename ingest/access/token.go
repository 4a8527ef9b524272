package access

import (
	"crypto/subtle"
	"net/http"
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
