package access

import (
	"net/http/httptest"
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
