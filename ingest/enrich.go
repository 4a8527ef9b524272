package ingest

import (
	"net/netip"

	"github.com/h3rum/h3rum/beacon"
)

// Enricher turns a decoded report into a Run: region from the client
// address (or a trusted CDN country header), browser family and version,
// and the bot flag. The client address is used here and nowhere after.
type Enricher struct {
	// GeoIP maps addresses to regions; nil leaves regions unknown (or
	// country-only, from Envelope.GeoCountry).
	GeoIP *GeoIP
}

// Enrich returns the Run for e. Envelope.ClientIP is cleared in the result
// so the address cannot travel further.
func (en *Enricher) Enrich(e beacon.Envelope) Run {
	var geo Geo
	if en != nil {
		geo = en.GeoIP.Lookup(e.ClientIP)
	}
	if cc := normCountry(e.GeoCountry); cc != "" && cc != geo.Country {
		// The CDN saw the client; its country wins. Finer detail from the
		// database belongs to another country then, so drop it.
		geo.Country, geo.Continent, geo.Subdivision, geo.CityID = cc, continentOf(cc), "", 0
	}
	run := Run{Envelope: e, Geo: geo}
	run.ClientIP = netip.Addr{}
	if e.Report != nil {
		run.Browser, run.BrowserMajor = browserOf(e.Report.Client.Brands, e.UserAgent)
		run.Bot = isBot(e.Report.Client, e.UserAgent)
	} else {
		run.Browser, run.BrowserMajor = browserFromUA(e.UserAgent)
		run.Bot = isBot(beacon.Client{}, e.UserAgent)
	}
	return run
}
