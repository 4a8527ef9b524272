package ingest

import (
	"net/netip"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

// Envelope is a decoded report with what the collector knows about its
// arrival. The client address is used for enrichment only and never stored.
type Envelope struct {
	Report     *beacon.Report
	Wire       []byte // the bytes Report was decoded from
	Received   time.Time
	ClientIP   netip.Addr
	UserAgent  string
	GeoCountry string // country from a trusted CDN header, "" when not configured
}

// Enricher turns a decoded report into a Run: region from the client
// address (or a trusted CDN country header), browser family and version,
// and the bot flag. The client address is used here and nowhere after.
type Enricher struct {
	// GeoIP maps addresses to regions; nil leaves regions unknown (or
	// country-only, from Envelope.GeoCountry).
	GeoIP *GeoIP
}

// Enrich returns the Run for e. The run holds nothing of the client
// address but the region it maps to.
func (en *Enricher) Enrich(e Envelope) store.Run {
	var geo store.Geo
	if en != nil {
		geo = en.GeoIP.Lookup(e.ClientIP)
	}
	if cc := normCountry(e.GeoCountry); cc != "" && cc != geo.Country {
		// The CDN saw the client; its country wins. Finer detail from the
		// database belongs to another country then, so drop it.
		geo.Country, geo.Continent, geo.Subdivision, geo.CityID = cc, continentOf(cc), "", 0
	}
	run := store.Run{Report: e.Report, Wire: e.Wire, Received: e.Received}
	run.Geo = geo
	if e.Report != nil {
		run.Browser, run.BrowserMajor = browserOf(e.Report.Client.Brands, e.UserAgent)
		run.Bot = isBot(e.Report.Client, e.UserAgent)
	} else {
		run.Browser, run.BrowserMajor = browserFromUA(e.UserAgent)
		run.Bot = isBot(beacon.Client{}, e.UserAgent)
	}
	return run
}
