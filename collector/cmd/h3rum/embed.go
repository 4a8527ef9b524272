package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/internal/cli"
)

// runEmbed prints the script tag a site embeds, configured by its URL and
// checked as the collector checks it (beacon.ScriptTag). With --pin it
// names this version of the script and carries its Subresource Integrity
// hash. The script comes from the H2 origin unless --collector says
// otherwise: every TCP response of the H3 origin carries its Alt-Svc, so a
// script loaded from there would teach the browser HTTP/3 before the run's
// first request and hide what the visitor knew before the page.
func runEmbed(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	collector := fs.String("collector", "", "origin of the collector serving the script, e.g. https://h2.rumtest.example.com (default --h2: "+
		"it answers Alt-Svc: clear, so loading the script teaches the browser nothing of the H3 origin; from the H3 origin every run "+
		"would record alt=2, first contact learnt from this page's script)")
	pin := fs.Bool("pin", false, "name this version of the script (/h3rum.<hash>.js, cached a year) and add integrity=; a collector serves only its own version, so print the tag again after upgrading it; without --pin /h3rum.js follows upgrades")
	params := map[string]*string{}
	for _, p := range beacon.ScriptParams() {
		usage := p.Usage()
		if p.Name == "endpoint" {
			usage = strings.Replace(usage, "the script's origin", "--collector", 1)
		}
		params[p.Name] = fs.String(p.Name, "", usage)
	}
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	q := url.Values{}
	for name, v := range params {
		q.Set(name, *v)
	}
	from := *collector
	if from == "" {
		from = *params["h2"]
	}
	tag, err := beacon.ScriptTag(from, q, *pin)
	if err != nil {
		// The collector's reasons name a parameter; here it is a flag.
		msg := strings.Replace(err.Error(), "parameter ", "--", 1)
		msg = strings.Replace(msg, "collector ", "--collector ", 1)
		msg = strings.Replace(msg, "h3 and h2 are required", "--h3 and --h2 are required", 1)
		return cli.Usagef("embed: %s", msg)
	}
	if h3 := *params["h3"]; strings.EqualFold(strings.TrimSuffix(from, "/"), strings.TrimSuffix(h3, "/")) {
		fmt.Fprintln(stderr, "embed: warning: the script from the H3 origin carries its Alt-Svc: each run then starts knowing HTTP/3 "+
			"(alt=2, learnt from this page's script), not what the visitor knew before; serve it from --h2 (the default) or the site itself")
	}
	fmt.Fprintln(stdout, tag)
	return nil
}
