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
// hash.
func runEmbed(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	collector := fs.String("collector", "", "origin of the collector serving the script, e.g. https://rumtest.example.com (required)")
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
	tag, err := beacon.ScriptTag(*collector, q, *pin)
	if err != nil {
		// The collector's reasons name a parameter; here it is a flag.
		msg := strings.Replace(err.Error(), "parameter ", "--", 1)
		msg = strings.Replace(msg, "collector ", "--collector ", 1)
		msg = strings.Replace(msg, "h3 and h2 are required", "--h3 and --h2 are required", 1)
		return cli.Usagef("embed: %s", msg)
	}
	fmt.Fprintln(stdout, tag)
	return nil
}
