package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/h3rum/h3rum/ingest"
)

// writeFiles writes name → content into a temporary directory and returns
// the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// build runs mkasn on the files in dir and returns the database's path.
func build(t *testing.T, dir string, csvs ...string) string {
	t.Helper()
	out := filepath.Join(dir, "asn.mmdb")
	args := []string{"-o", out}
	for _, c := range csvs {
		args = append(args, filepath.Join(dir, c))
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("mkasn %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Log(strings.TrimSpace(stdout.String() + stderr.String()))
	return out
}

// The fixture follows @ip-location-db/asn: no header, inclusive ranges,
// organisations quoted when they hold a comma.
const (
	fixtureIPv4 = `1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."
1.0.4.1,1.0.7.254,38803,Gtelecom Pty Ltd
8.8.8.0,8.8.8.255,15169,
9.0.0.0,9.0.1.255,100,Wide
9.0.1.0,9.0.1.127,200,Narrow
192.88.99.0,192.88.99.255,6939,Hurricane Electric LLC
`
	fixtureIPv6 = `2001:200::,2001:200:1b9:ffff:ffff:ffff:ffff:ffff,2500,WIDE Project
2001:200:1ba::,2001:200:1ba:ffff:ffff:ffff:ffff:ffff,24047,"Internet Systems Consortium, Inc."
2002::,2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff,6939,Hurricane Electric LLC
2606:4700::,2606:4700:ffff:ffff:ffff:ffff:ffff:ffff,13335,"Cloudflare, Inc."
`
)

func TestBuildAndLookUp(t *testing.T) {
	dir := writeFiles(t, map[string]string{"asn-ipv4.csv": fixtureIPv4, "asn-ipv6.csv": fixtureIPv6})
	path := build(t, dir, "asn-ipv4.csv", "asn-ipv6.csv")

	// The collector's own code path: --asn-db.
	g, err := ingest.OpenGeoIP("", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })

	for _, tc := range []struct {
		ip  string
		asn uint32 // 0: not in the database
		org string
	}{
		{"0.255.255.255", 0, ""},
		{"1.0.0.0", 13335, "Cloudflare, Inc."}, // a range that is one /24
		{"1.0.0.255", 13335, "Cloudflare, Inc."},
		{"1.0.1.0", 0, ""},
		// 1.0.4.1–1.0.7.254 is eighteen prefixes, from /32s up to /24s.
		{"1.0.4.0", 0, ""},
		{"1.0.4.1", 38803, "Gtelecom Pty Ltd"},
		{"1.0.5.128", 38803, "Gtelecom Pty Ltd"},
		{"1.0.7.254", 38803, "Gtelecom Pty Ltd"},
		{"1.0.7.255", 0, ""},
		{"8.8.8.8", 15169, ""}, // no organisation in the file
		// Overlapping rows: the later one wins where they overlap.
		{"9.0.0.255", 100, "Wide"},
		{"9.0.1.0", 200, "Narrow"},
		{"9.0.1.127", 200, "Narrow"},
		{"9.0.1.128", 100, "Wide"},
		{"::ffff:1.0.0.1", 13335, "Cloudflare, Inc."},
		// 192.88.99.0/24 is reserved: left out, as in GeoLite2.
		{"192.88.99.1", 0, ""},
		// 2001:200::–2001:200:1b9:ffff:… is not one prefix.
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", 0, ""},
		{"2001:200::", 2500, "WIDE Project"},
		{"2001:200:100::1", 2500, "WIDE Project"},
		{"2001:200:1b9:ffff:ffff:ffff:ffff:ffff", 2500, "WIDE Project"},
		{"2001:200:1ba::", 24047, "Internet Systems Consortium, Inc."},
		{"2001:200:1ba:ffff:ffff:ffff:ffff:ffff", 24047, "Internet Systems Consortium, Inc."},
		{"2001:200:1bb::", 0, ""},
		// 6to4 resolves through the IPv4 address it carries (1.0.0.1), as in
		// GeoLite2, not through the CSV's row for 2002::/16.
		{"2002:100:1::1", 13335, "Cloudflare, Inc."},
		{"2002:800:1::1", 0, ""},
		{"2606:46ff:ffff:ffff:ffff:ffff:ffff:ffff", 0, ""},
		{"2606:4700::", 13335, "Cloudflare, Inc."},
		{"2606:4700:ffff:ffff:ffff:ffff:ffff:ffff", 13335, "Cloudflare, Inc."},
		{"2606:4701::", 0, ""},
	} {
		geo := g.Lookup(netip.MustParseAddr(tc.ip))
		if geo.ASN != tc.asn || geo.ASOrg != tc.org {
			t.Errorf("%s: AS%d %q, want AS%d %q", tc.ip, geo.ASN, geo.ASOrg, tc.asn, tc.org)
		}
	}

	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if m := db.Metadata; m.DatabaseType != "GeoLite2-ASN" || m.IPVersion != 6 || m.Description["en"] == "" {
		t.Errorf("metadata: type %q, IP version %d, description %q; want GeoLite2-ASN, 6, the source",
			m.DatabaseType, m.IPVersion, m.Description["en"])
	}
}

func TestHeaderTolerated(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.csv": "ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization\n" + fixtureIPv4})
	g, err := ingest.OpenGeoIP("", build(t, dir, "a.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if geo := g.Lookup(netip.MustParseAddr("1.0.0.1")); geo.ASN != 13335 {
		t.Errorf("1.0.0.1: AS%d, want AS13335", geo.ASN)
	}
}

func TestErrors(t *testing.T) {
	good := "1.0.0.0,1.0.0.255,13335,Cloudflare\n"
	for _, tc := range []struct {
		name string
		csv  string   // written as bad.csv; "" writes nothing
		args []string // default: -o <dir>/asn.mmdb <dir>/bad.csv
		want string   // in the error
	}{
		{"bad start", good + "1.0.1.x,1.0.1.255,1,X\n", nil, "bad.csv:2: ip_range_start"},
		{"bad end", good + good + "1.0.1.0,,1,X\n", nil, "bad.csv:3: ip_range_end"},
		{"numeric form", "16777216,16777471,13335,Cloudflare\n", nil, "bad.csv:1: ip_range_start"},
		{"end before start", good + "1.0.1.255,1.0.1.0,1,X\n", nil, "bad.csv:2: range 1.0.1.255-1.0.1.0: start is after end"},
		{"mixed families", good + "1.0.1.0,2001:db8::,1,X\n", nil, "bad.csv:2: range 1.0.1.0-2001:db8::: both ends must be IPv4 or both IPv6"},
		{"zone", good + "fe80::1%eth0,fe80::2%eth0,1,X\n", nil, "bad.csv:2: range"},
		{"asn not a number", good + "1.0.1.0,1.0.1.255,AS13335,X\n", nil, `bad.csv:2: autonomous_system_number "AS13335"`},
		{"asn too big", good + "1.0.1.0,1.0.1.255,4294967296,X\n", nil, "bad.csv:2: autonomous_system_number"},
		{"negative asn", good + "1.0.1.0,1.0.1.255,-1,X\n", nil, "bad.csv:2: autonomous_system_number"},
		{"three fields", good + "1.0.1.0,1.0.1.255,1\n", nil, "bad.csv:2: 3 fields, want 4"},
		{"five fields", good + "1.0.1.0,1.0.1.255,1,X,Y\n", nil, "bad.csv:2: 5 fields, want 4"},
		{"bare quote", good + "1.0.1.0,1.0.1.255,1,X \"Y\"\n", nil, "bad.csv:2: bare \" in non-quoted-field"},
		{"unterminated quote", good + "1.0.1.0,1.0.1.255,1,\"X\n", nil, "bad.csv:2: extraneous or missing \" in quoted-field"},
		{"missing file", "", []string{"-o", "{dir}/asn.mmdb", "{dir}/nope.csv"}, "opening CSV file: open "},
		{"no -o", good, []string{"{dir}/bad.csv"}, "-o is required"},
		{"no files", good, []string{"-o", "{dir}/asn.mmdb"}, "no CSV files given"},
		{"unknown flag", good, []string{"-x"}, "flag provided but not defined: -x"},
		{"output dir missing", good, []string{"-o", "{dir}/no/such/dir/asn.mmdb", "{dir}/bad.csv"}, "creating the database file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.csv != "" {
				if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte(tc.csv), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := tc.args
			if args == nil {
				args = []string{"-o", "{dir}/asn.mmdb", "{dir}/bad.csv"}
			}
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "{dir}", dir)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line containing %q", msg, tc.want)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "bad.csv" {
					t.Errorf("%s left behind after the error", e.Name())
				}
			}
		})
	}
}

// TestRealData builds the database from the real @ip-location-db/asn files
// when H3RUM_ASN_CSV_DIR names their directory (npm pack @ip-location-db/asn
// and untar it); without it the test is skipped, so the suite needs no
// network.
func TestRealData(t *testing.T) {
	dir := os.Getenv("H3RUM_ASN_CSV_DIR")
	if dir == "" {
		t.Skip("H3RUM_ASN_CSV_DIR not set")
	}
	out := filepath.Join(t.TempDir(), "asn.mmdb")
	var stdout, stderr bytes.Buffer
	args := []string{"-o", out, filepath.Join(dir, "asn-ipv4.csv"), filepath.Join(dir, "asn-ipv6.csv")}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(stdout.String() + stderr.String()))
	g, err := ingest.OpenGeoIP("", out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for ip, want := range map[string]uint32{"1.1.1.1": 13335, "2606:4700:4700::1111": 13335, "8.8.8.8": 15169, "2001:4860:4860::8888": 15169} {
		if geo := g.Lookup(netip.MustParseAddr(ip)); geo.ASN != want {
			t.Errorf("%s: AS%d %q, want AS%d", ip, geo.ASN, geo.ASOrg, want)
		}
	}
}
