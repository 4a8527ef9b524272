package access

import (
	"fmt"
	"net/url"
	"strings"
)

// Origins is the allowlist of page origins that may use the collector from
// the browser: read /probe timings (CORS and Timing-Allow-Origin) and post
// reports. One rule for both, so a page that may measure may also report.
// The zero Origins allows every page. Credentials are never allowed: no
// response carries Access-Control-Allow-Credentials.
type Origins struct {
	any bool
	set map[string]struct{} // exact "scheme://host[:port]", lower-case
}

// ParseOrigins checks and compiles an allowlist of "scheme://host[:port]"
// entries; nil, empty or ["*"] allows every page.
func ParseOrigins(allow []string) (Origins, error) {
	if len(allow) == 0 {
		return Origins{any: true}, nil
	}
	o := Origins{set: make(map[string]struct{}, len(allow))}
	for _, a := range allow {
		if a == "*" {
			if len(allow) > 1 {
				return Origins{}, fmt.Errorf("allowed origins: \"*\" must be the only entry, got %q", allow)
			}
			return Origins{any: true}, nil
		}
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return Origins{}, fmt.Errorf("allowed origin %q: want scheme://host[:port], e.g. https://www.example.com", a)
		}
		o.set[strings.ToLower(u.Scheme+"://"+u.Host)] = struct{}{}
	}
	return o, nil
}

// Any reports whether every page is allowed.
func (o *Origins) Any() bool { return o.any || o.set == nil }

// Allows reports whether the page origin (an Origin header's value) is
// allowed; "" (no Origin) is allowed only when every page is.
func (o *Origins) Allows(origin string) bool {
	if o.Any() {
		return true
	}
	_, ok := o.set[strings.ToLower(origin)]
	return ok
}
