// Package ingest takes beacon reports from the collector to ClickHouse:
// enrichment with GeoIP, a bounded queue, an on-disk spool, batched inserts,
// schema migrations and a managed local ClickHouse server.
package ingest

import "github.com/h3rum/h3rum/beacon"

// Run is an accepted report with its enrichment, as stored.
type Run struct {
	beacon.Envelope
	Geo          Geo
	Browser      string // browser family from UA-CH brands or User-Agent: "Chrome", "Firefox", "Safari", "Edge", …
	BrowserMajor int
	Bot          bool // headless user agent or navigator.webdriver
}

// Geo is the region a client address maps to. Empty strings and zeros
// mean unknown; placeholder countries (ZZ, XX, T1, A1, A2) are unknown.
type Geo struct {
	Continent   string // two-letter continent code: AF AN AS EU NA OC SA
	Country     string // ISO 3166-1 alpha-2
	Subdivision string // ISO 3166-2 code of the first subdivision, e.g. "US-CA"
	CityID      uint32 // GeoNames id, 0 when unknown
	ASN         uint32
	ASOrg       string
}
