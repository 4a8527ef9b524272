package ingest

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/h3rum/h3rum/beacon"

	"github.com/h3rum/h3rum/ingest/store"
)

// writeMMDB writes a database of the given metadata type with one record per
// network into a temporary directory and returns its path.
func writeMMDB(t *testing.T, dbType string, records map[string]mmdbtype.Map) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, rec := range records {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, rec); err != nil {
			t.Fatalf("inserting %s: %v", cidr, err)
		}
	}
	path := filepath.Join(t.TempDir(), dbType+".mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func cityRecord(continent, country, sub string, cityID uint64) mmdbtype.Map {
	m := mmdbtype.Map{
		"country": mmdbtype.Map{"iso_code": mmdbtype.String(country)},
	}
	if continent != "" {
		m["continent"] = mmdbtype.Map{"code": mmdbtype.String(continent)}
	}
	if sub != "" {
		m["subdivisions"] = mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String(sub)}}
	}
	if cityID != 0 {
		m["city"] = mmdbtype.Map{"geoname_id": mmdbtype.Uint32(cityID)}
	}
	return m
}

func flatRecordMap(country, state, city string) mmdbtype.Map {
	return mmdbtype.Map{
		"country_code": mmdbtype.String(country),
		"state1":       mmdbtype.String(state),
		"city":         mmdbtype.String(city),
	}
}

func TestGeoIPLayouts(t *testing.T) {
	cityDB := writeMMDB(t, "GeoLite2-City", map[string]mmdbtype.Map{
		"203.0.113.0/24":  cityRecord("NA", "US", "CA", 5391959),
		"198.51.100.0/24": cityRecord("", "DE", "BE", 2950159), // continent missing
		"192.0.2.0/25":    cityRecord("EU", "ZZ", "", 0),       // placeholder
		"192.0.2.128/25":  cityRecord("AS", "T1", "", 0),
		"2001:db8::/32":   cityRecord("OC", "au", "nsw", 2147714),
	})
	countryDB := writeMMDB(t, "GeoLite2-Country", map[string]mmdbtype.Map{
		"203.0.113.0/24": cityRecord("EU", "FR", "", 0),
	})
	flatDB := writeMMDB(t, "dbip-city-lite", map[string]mmdbtype.Map{
		"203.0.113.0/24":  flatRecordMap("JP", "Tokyo", "Tokyo"),
		"198.51.100.0/24": flatRecordMap("BR", "São Paulo", "Campinas"),
		"192.0.2.0/24":    flatRecordMap("XX", "", ""),
	})
	asnDB := writeMMDB(t, "GeoLite2-ASN", map[string]mmdbtype.Map{
		"203.0.113.0/24": {
			"autonomous_system_number":       mmdbtype.Uint32(64500),
			"autonomous_system_organization": mmdbtype.String("Example Net"),
		},
	})

	for _, tc := range []struct {
		name, db, asn, ip string
		want              store.Geo
	}{
		{"city", cityDB, "", "203.0.113.9", store.Geo{Continent: "NA", Country: "US", Subdivision: "US-CA", CityID: 5391959}},
		{"city continent derived", cityDB, "", "198.51.100.1", store.Geo{Continent: "EU", Country: "DE", Subdivision: "DE-BE", CityID: 2950159}},
		{"city placeholder ZZ", cityDB, "", "192.0.2.1", store.Geo{}},
		{"city placeholder T1", cityDB, "", "192.0.2.200", store.Geo{}},
		{"city ipv6 lower case", cityDB, "", "2001:db8::1", store.Geo{Continent: "OC", Country: "AU", Subdivision: "AU-NSW", CityID: 2147714}},
		{"city ipv4-mapped", cityDB, "", "::ffff:203.0.113.9", store.Geo{Continent: "NA", Country: "US", Subdivision: "US-CA", CityID: 5391959}},
		{"city not found", cityDB, "", "10.0.0.1", store.Geo{}},
		{"country", countryDB, "", "203.0.113.9", store.Geo{Continent: "EU", Country: "FR"}},
		{"flat", flatDB, "", "203.0.113.9", store.Geo{Continent: "AS", Country: "JP"}},
		{"flat south america", flatDB, "", "198.51.100.7", store.Geo{Continent: "SA", Country: "BR"}},
		{"flat placeholder", flatDB, "", "192.0.2.7", store.Geo{}},
		{"with asn", cityDB, asnDB, "203.0.113.9", store.Geo{Continent: "NA", Country: "US", Subdivision: "US-CA", CityID: 5391959, ASN: 64500, ASOrg: "Example Net"}},
		{"asn only", "", asnDB, "203.0.113.9", store.Geo{ASN: 64500, ASOrg: "Example Net"}},
		{"nothing", "", "", "203.0.113.9", store.Geo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := OpenGeoIP(tc.db, tc.asn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			if got := g.Lookup(netip.MustParseAddr(tc.ip)); got != tc.want {
				t.Errorf("Lookup(%s) = %+v, want %+v", tc.ip, got, tc.want)
			}
		})
	}
}

func TestOpenGeoIPErrors(t *testing.T) {
	asnDB := writeMMDB(t, "GeoLite2-ASN", map[string]mmdbtype.Map{})
	cityDB := writeMMDB(t, "GeoLite2-City", map[string]mmdbtype.Map{})
	odd := writeMMDB(t, "Weather-Stations", map[string]mmdbtype.Map{})
	garbage := filepath.Join(t.TempDir(), "garbage.mmdb")
	os.WriteFile(garbage, []byte("not a database"), 0o600)
	for _, tc := range []struct{ name, db, asn string }{
		{"missing file", filepath.Join(t.TempDir(), "nope.mmdb"), ""},
		{"garbage", garbage, ""},
		{"asn as location", asnDB, ""},
		{"city as asn", "", cityDB},
		{"unknown type", odd, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := OpenGeoIP(tc.db, tc.asn)
			if err == nil {
				g.Close()
				t.Fatal("OpenGeoIP succeeded, want an error")
			}
		})
	}
}

func TestEnrich(t *testing.T) {
	cityDB := writeMMDB(t, "GeoIP2-City", map[string]mmdbtype.Map{
		"203.0.113.0/24": cityRecord("NA", "US", "CA", 5391959),
	})
	g, err := OpenGeoIP(cityDB, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	en := &Enricher{GeoIP: g}
	ip := netip.MustParseAddr("203.0.113.9")
	rep := &beacon.Report{Client: beacon.Client{Brands: []beacon.Brand{{Brand: "Not A(Brand", Version: "99"}, {Brand: "Google Chrome", Version: "121"}, {Brand: "Chromium", Version: "121"}}}}

	run := en.Enrich(Envelope{Report: rep, ClientIP: ip, UserAgent: "Mozilla/5.0 Chrome/121.0.0.0 Safari/537.36"})
	if rec, err := appendRecord(nil, &store.Run{Report: rep, Wire: []byte("{}"), Enrichment: run.Enrichment}); err != nil ||
		strings.Contains(string(rec), "203.0.113.9") {
		t.Errorf("spool record %q (%v) keeps the client address", rec, err)
	}
	if run.Geo.Subdivision != "US-CA" || run.Browser != BrowserChrome || run.BrowserMajor != 121 || run.Bot {
		t.Errorf("Enrich = %+v %s %d bot=%v", run.Geo, run.Browser, run.BrowserMajor, run.Bot)
	}
	// A trusted CDN country header overrides the database and drops its detail.
	run = en.Enrich(Envelope{Report: rep, ClientIP: ip, GeoCountry: "gb"})
	if want := (store.Geo{Continent: "EU", Country: "GB"}); run.Geo != want {
		t.Errorf("with header GB: Geo = %+v, want %+v", run.Geo, want)
	}
	run = en.Enrich(Envelope{Report: rep, ClientIP: ip, GeoCountry: "US"})
	if run.Geo.Subdivision != "US-CA" {
		t.Errorf("with agreeing header: Geo = %+v, want the database's detail kept", run.Geo)
	}
	run = en.Enrich(Envelope{Report: rep, ClientIP: ip, GeoCountry: "XX"})
	if run.Geo.Country != "US" {
		t.Errorf("with placeholder header: Geo = %+v, want the database's country", run.Geo)
	}
	// Without a database the header alone gives the country.
	run = (&Enricher{}).Enrich(Envelope{Report: rep, ClientIP: ip, GeoCountry: "NZ"})
	if want := (store.Geo{Continent: "OC", Country: "NZ"}); run.Geo != want {
		t.Errorf("header only: Geo = %+v, want %+v", run.Geo, want)
	}
	rep.Client.Webdriver = true
	if run = en.Enrich(Envelope{Report: rep}); !run.Bot {
		t.Error("navigator.webdriver not flagged as bot")
	}
}

func TestContinentTable(t *testing.T) {
	seen := map[string]string{}
	for line := range strings.Lines(continentTable) {
		cont := line[:2]
		for i := 3; i+2 <= len(line); i += 3 {
			cc := line[i : i+2]
			if prev, ok := seen[cc]; ok {
				t.Errorf("%s listed under %s and %s", cc, prev, cont)
			}
			seen[cc] = cont
			if i+2 < len(line) && line[i+2] != ' ' && line[i+2] != '\n' {
				t.Errorf("bad separator after %s in %s", cc, cont)
			}
		}
	}
	if len(seen) < 245 {
		t.Errorf("table has %d countries, want all ~249", len(seen))
	}
	for cc, want := range map[string]string{"US": "NA", "FR": "EU", "RU": "EU", "TR": "AS", "BR": "SA", "ZA": "AF", "NZ": "OC", "AQ": "AN", "AF": "AS", "ZZ": "", "": "", "u": ""} {
		if got := continentOf(cc); got != want {
			t.Errorf("continentOf(%q) = %q, want %q", cc, got, want)
		}
	}
}

// DB-IP Lite ships separate IPv4 and IPv6 files: a comma-separated list
// asks each in turn.
func TestGeoIPSeveralDatabases(t *testing.T) {
	v4 := writeMMDB(t, "dbip-city-ipv4", map[string]mmdbtype.Map{"81.2.69.0/24": flatRecordMap("GB", "England", "London")})
	v6 := writeMMDB(t, "dbip-city-ipv6", map[string]mmdbtype.Map{"2001:db8::/32": flatRecordMap("JP", "Tokyo", "Tokyo")})
	g, err := OpenGeoIP(v4+", "+v6, "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for ip, want := range map[string]store.Geo{
		"81.2.69.1":   {Continent: "EU", Country: "GB"},
		"2001:db8::1": {Continent: "AS", Country: "JP"},
		"192.0.2.1":   {},
	} {
		if got := g.Lookup(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Lookup(%s) = %+v, want %+v", ip, got, want)
		}
	}
	if _, err := OpenGeoIP(v4+","+filepath.Join(t.TempDir(), "missing.mmdb"), ""); err == nil {
		t.Error("a missing second database was accepted")
	}
}
