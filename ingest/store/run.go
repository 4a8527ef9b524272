package store

import (
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// Run is one accepted report as it is stored: the decoded report, the wire
// bytes it was decoded from, when it arrived, and what enrichment added.
// Every row of the samples table is one of its samples (see columns.go).
type Run struct {
	Report *beacon.Report
	// Wire is the validated report as received. The spool keeps these
	// bytes (and the enrichment) and decodes them again on replay, so a
	// new report field needs no spool codec of its own.
	Wire     []byte
	Received time.Time
	// Handshakes are an agent run's handshake samples (phase
	// PhaseHandshake), stored beside the report's; HandshakeWire is their
	// JSON as received, which the spool keeps like Wire. Browser runs
	// have neither.
	Handshakes    []beacon.Sample
	HandshakeWire []byte
	Enrichment
}

// Enrichment is what the collector adds to a report at ingest. It holds
// nothing that identifies the client: the address is used to find Geo and
// then dropped.
type Enrichment struct {
	Geo          Geo
	Browser      string // browser family from UA-CH brands or User-Agent: "Chrome", "Firefox", "Safari", "Edge", …
	BrowserMajor int
	Bot          bool // headless user agent or navigator.webdriver
	// Source is who measured: SourceAgent for `h3rum agent` over the
	// WebSocket ingest with the agent token; "" (spool records before
	// agents) and SourceBrowser mean a visitor's browser.
	Source string `json:",omitempty"`
}

// Sources of a run, as the samples table's source column names them.
const (
	SourceBrowser = "browser"
	SourceAgent   = "agent"
)

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
