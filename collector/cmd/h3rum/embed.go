package main

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"flag"
	"fmt"
	"html"
	"io"
	"net/url"
	"strings"

	"github.com/h3rum/h3rum/beacon"
)

// embedConfig is what `h3rum embed` prints a script tag for.
type embedConfig struct {
	collector string // origin serving the script
	pin       bool   // the content-addressed name with integrity=
	params    map[string]*string
}

// embedParams are the script URL's parameters, in the order -h lists them
// (beacon/PROTOCOL.md has their meaning); "" leaves one to its default.
var embedParams = []struct{ name, usage string }{
	{"h3", "origin serving /probe over TCP with Alt-Svc: h3 and over QUIC (required)"},
	{"h2", "TCP-only origin serving /probe (required)"},
	{"site", "site id, [A-Za-z0-9._-]{1,64} (default: the page's host name)"},
	{"sample", "fraction of page loads that run the test, 0 to 1 (default 1)"},
	{"endpoint", "origin receiving reports at /beacon (default: --collector)"},
	{"parallel", "requests per parallel batch, 1 to 20 (default 5)"},
	{"warmup", "sequential warm-up requests to the H3 origin, 0 to 10 (default 2)"},
	{"bytes", "probe body size, 0 to 16777216 (default 0)"},
	{"trigger", "load, or manual: the page calls h3rum.run() (default load)"},
	{"order", "random, or h2first (default random)"},
	{"consent", "wait: nothing runs, no request is made, until the page calls h3rum.consent() (default: no wait)"},
}

// runEmbed prints the script tag a site embeds, configured by its URL and
// checked as the collector checks it. With --pin it names this version of
// the script and carries its Subresource Integrity hash.
func runEmbed(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	c := embedConfig{params: map[string]*string{}}
	fs.StringVar(&c.collector, "collector", "", "origin of the collector serving the script, e.g. https://rumtest.example.com (required)")
	fs.BoolVar(&c.pin, "pin", false, "name this version of the script (/h3rum.<hash>.js, cached a year) and add integrity=; a collector serves only its own version, so print the tag again after upgrading it; without --pin /h3rum.js follows upgrades")
	for _, p := range embedParams {
		c.params[p.name] = fs.String(p.name, "", p.usage)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	tag, err := c.tag()
	if err != nil {
		return usagef("embed: %v", err)
	}
	fmt.Fprintln(stdout, tag)
	return nil
}

func (c *embedConfig) tag() (string, error) {
	col, err := url.Parse(c.collector)
	if c.collector == "" || err != nil || (col.Scheme != "https" && col.Scheme != "http") || col.Host == "" ||
		(col.Path != "" && col.Path != "/") || col.RawQuery != "" || col.User != nil {
		return "", fmt.Errorf("--collector %q: want the collector's origin, e.g. https://rumtest.example.com", c.collector)
	}
	origin := col.Scheme + "://" + col.Host
	q := url.Values{}
	for name, v := range c.params {
		if *v != "" {
			q.Set(name, *v)
		}
	}
	if q.Get("h3") == "" || q.Get("h2") == "" {
		return "", fmt.Errorf("--h3 and --h2 are required")
	}
	if q.Get("endpoint") == "" {
		// Without it a sampled visit reads the element for the script's origin.
		q.Set("endpoint", origin)
	}
	cfg, err := beacon.ParseScriptConfig(q.Encode())
	if err != nil {
		// The collector's reason names the parameter; here it is a flag.
		return "", fmt.Errorf("%s", strings.Replace(err.Error(), "parameter ", "--", 1))
	}
	if !c.pin {
		return fmt.Sprintf(`<script async src="%s"></script>`, html.EscapeString(origin+"/h3rum.js?"+q.Encode())), nil
	}
	js, err := beacon.ConfiguredScript(cfg)
	if err != nil {
		return "", err
	}
	sum := sha512.Sum384([]byte(js))
	src := origin + "/" + beacon.ScriptName() + "?" + q.Encode()
	return fmt.Sprintf(`<script async src="%s" integrity="sha384-%s" crossorigin="anonymous"></script>`,
		html.EscapeString(src), base64.StdEncoding.EncodeToString(sum[:])), nil
}
