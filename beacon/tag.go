package beacon

import (
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net/url"
)

// ScriptTag is the script tag a site embeds to load the script from the
// collector at origin collector, configured by params (ScriptParams' names;
// endpoint defaults to the collector), checked as the collector checks a
// script URL. With pin it names this version of the script (ScriptName,
// cached a year) and carries its Subresource Integrity hash; without, it
// loads /h3rum.js, which follows the collector's upgrades.
func ScriptTag(collector string, params url.Values, pin bool) (string, error) {
	if checkURLOrigin(collector) != nil {
		return "", fmt.Errorf("collector %q: want the collector's origin, e.g. https://rumtest.example.com", collector)
	}
	col, _ := url.Parse(collector)
	origin := col.Scheme + "://" + col.Host
	q := url.Values{}
	for name, vs := range params {
		if len(vs) > 0 && vs[0] != "" {
			q[name] = vs
		}
	}
	if q.Get("h3") == "" || q.Get("h2") == "" {
		return "", errors.New("h3 and h2 are required")
	}
	if q.Get("endpoint") == "" {
		// Without it a sampled visit reads the element for the script's origin.
		q.Set("endpoint", origin)
	}
	cfg, err := ParseScriptConfig(q.Encode())
	if err != nil {
		return "", err
	}
	if !pin {
		return fmt.Sprintf(`<script async src="%s"></script>`, html.EscapeString(origin+"/h3rum.js?"+q.Encode())), nil
	}
	js, err := ConfiguredScript(cfg)
	if err != nil {
		return "", err
	}
	sum := sha512.Sum384([]byte(js))
	src := origin + "/" + ScriptName() + "?" + q.Encode()
	return fmt.Sprintf(`<script async src="%s" integrity="sha384-%s" crossorigin="anonymous"></script>`,
		html.EscapeString(src), base64.StdEncoding.EncodeToString(sum[:])), nil
}
