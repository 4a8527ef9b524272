package ingest

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/h3rum/h3rum/ingest/store"
)

// GeoIP maps client addresses to regions with MaxMind-format databases: a
// location database — GeoIP2/GeoLite2 City or Country, or DB-IP Lite's flat
// layout (country_code, state1, city) as published by ip-location-db — and
// an optional ASN database. The layout is chosen from the database's
// metadata type. It is safe for concurrent use.
//
// DB-IP's flat layout names subdivisions ("California") but has no ISO
// 3166-2 codes and no GeoNames ids, so with it Geo.Subdivision stays empty
// (a name would mix with codes in the same column) and Geo.CityID is 0.
type GeoIP struct {
	locs []*location    // tried in order until one knows the address
	asn  *geoip2.Reader // optional
}

// location is one location database in one of the two layouts.
type location struct {
	city *geoip2.Reader    // GeoIP2 layout
	flat *maxminddb.Reader // DB-IP flat layout
}

// OpenGeoIP opens the location database at path and, when asnPath is not
// empty, the ASN database at asnPath. Either path may be empty. path may
// list several databases separated by commas — DB-IP Lite ships one file
// for IPv4 and one for IPv6 — which are asked in order.
func OpenGeoIP(path, asnPath string) (*GeoIP, error) {
	g := &GeoIP{}
	for _, p := range strings.Split(path, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if err := g.openLocation(p); err != nil {
			g.Close()
			return nil, err
		}
	}
	if asnPath != "" {
		r, err := geoip2.Open(asnPath)
		if err != nil {
			g.Close()
			if r != nil {
				r.Close()
			}
			return nil, fmt.Errorf("opening ASN database %q: %w", asnPath, err)
		}
		if _, err := r.ASN(netip.IPv4Unspecified()); err != nil {
			t := r.Metadata().DatabaseType
			r.Close()
			g.Close()
			return nil, fmt.Errorf("opening ASN database %q: type %q has no ASN data", asnPath, t)
		}
		g.asn = r
	}
	return g, nil
}

func (g *GeoIP) openLocation(path string) error {
	r, err := geoip2.Open(path)
	if err == nil {
		if _, err := r.City(netip.IPv4Unspecified()); err != nil {
			t := r.Metadata().DatabaseType
			r.Close()
			return fmt.Errorf("opening GeoIP database %q: type %q has no location data", path, t)
		}
		g.locs = append(g.locs, &location{city: r})
		return nil
	}
	if r != nil {
		r.Close()
	}
	var unknown geoip2.UnknownDatabaseTypeError
	if !errors.As(err, &unknown) {
		return fmt.Errorf("opening GeoIP database %q: %w", path, err)
	}
	// Not a type geoip2 knows: accept DB-IP's flat layout, whose files
	// (ip-location-db) carry their own type names.
	t := strings.ToLower(unknown.DatabaseType)
	if !strings.Contains(t, "dbip") && !strings.Contains(t, "db-ip") && !strings.Contains(t, "ip-location") &&
		!strings.Contains(t, "city") && !strings.Contains(t, "country") {
		return fmt.Errorf("opening GeoIP database %q: unsupported database type %q (want GeoIP2/GeoLite2 City or Country, or DB-IP Lite)", path, unknown.DatabaseType)
	}
	fr, err := maxminddb.Open(path)
	if err != nil {
		return fmt.Errorf("opening GeoIP database %q: %w", path, err)
	}
	g.locs = append(g.locs, &location{flat: fr})
	return nil
}

// Close releases the databases.
func (g *GeoIP) Close() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, l := range g.locs {
		if l.city != nil {
			errs = append(errs, l.city.Close())
		}
		if l.flat != nil {
			errs = append(errs, l.flat.Close())
		}
	}
	if g.asn != nil {
		errs = append(errs, g.asn.Close())
	}
	return errors.Join(errs...)
}

// flatRecord is DB-IP Lite's flat layout.
type flatRecord struct {
	CountryCode string `maxminddb:"country_code"`
	State1      string `maxminddb:"state1"`
	City        string `maxminddb:"city"`
}

// Lookup returns the region of ip. Unknown parts are left empty; lookup
// errors (a damaged database) give an empty Geo rather than an error,
// because a sample without a region is still worth keeping.
func (g *GeoIP) Lookup(ip netip.Addr) store.Geo {
	var geo store.Geo
	if g == nil || !ip.IsValid() {
		return geo
	}
	ip = ip.Unmap()
	for _, l := range g.locs {
		if geo.Country != "" {
			break
		}
		l.lookup(ip, &geo)
	}
	if geo.Continent == "" {
		geo.Continent = continentOf(geo.Country)
	}
	if g.asn != nil {
		if a, err := g.asn.ASN(ip); err == nil {
			geo.ASN = uint32(a.AutonomousSystemNumber)
			geo.ASOrg = a.AutonomousSystemOrganization
		}
	}
	return geo
}

// lookup fills geo's location fields from one database.
func (l *location) lookup(ip netip.Addr, geo *store.Geo) {
	switch {
	case l.city != nil:
		if c, err := l.city.City(ip); err == nil {
			geo.Country = normCountry(c.Country.ISOCode)
			if geo.Country != "" {
				geo.Continent = normContinent(c.Continent.Code)
				if len(c.Subdivisions) > 0 && c.Subdivisions[0].ISOCode != "" {
					geo.Subdivision = geo.Country + "-" + strings.ToUpper(c.Subdivisions[0].ISOCode)
				}
				geo.CityID = uint32(c.City.GeoNameID)
			}
		}
	case l.flat != nil:
		var rec flatRecord
		if err := l.flat.Lookup(ip).Decode(&rec); err == nil {
			geo.Country = normCountry(rec.CountryCode)
		}
	}
}

// normContinent keeps the seven continent codes and drops anything else.
func normContinent(c string) string {
	switch c = strings.ToUpper(c); c {
	case "AF", "AN", "AS", "EU", "NA", "OC", "SA":
		return c
	}
	return ""
}
