// Package beacon holds the h3rum browser beacon: its JavaScript source and
// built assets, and the Go side of its wire format (see PROTOCOL.md).
package beacon

// Version is the wire-format version the script and Encode send. Decode
// also reads every earlier one (MinVersion on): what a version lacks reads
// as its zero value.
const Version = 2

// MinVersion is the oldest wire-format version Decode accepts: a pinned
// script is cached for a year.
const MinVersion = 1

// Limits of the protocol; a report outside them is rejected.
const (
	MaxParallel = 20 // requests per parallel batch
	MaxWarmup   = 10 // sequential warm-up requests to the H3 origin
	// MaxSamples is the most samples a report can carry: the warm-up
	// requests to the H3 origin, one warm-up request to the H2 origin, and
	// two parallel batches.
	MaxSamples = MaxWarmup + 1 + 2*MaxParallel
)

// The design's defaults: the script's (data-parallel, data-warmup) and
// the agent's.
const (
	DefaultParallel = 5 // Dropbox's N
	DefaultWarmup   = 2 // the first is TCP and brings Alt-Svc; the second is QUIC
)

// Proto is an HTTP protocol as the beacon records it.
type Proto string

// Protocols after normalisation of nextHopProtocol.
const (
	ProtoUnknown Proto = "unknown"
	ProtoH1      Proto = "h1"
	ProtoH2      Proto = "h2"
	ProtoH3      Proto = "h3"
)

// Phase says which part of a run a sample belongs to.
type Phase string

// Phases of a run.
const (
	PhaseWarmup   Phase = "warmup"
	PhaseParallel Phase = "parallel"
	// PhaseHandshake marks the agent's handshake samples: each a request
	// on a new connection (full handshake, resumed session or 0-RTT). A
	// browser report never has them; on the wire the phase is "h".
	PhaseHandshake Phase = "handshake"
)

// Report is one run of the test in one browser, as sent to POST /beacon.
type Report struct {
	Version       int      // wire-format version, MinVersion to Version
	RunID         [16]byte // random per run, sent as 32 hex digits
	Site          string   // data-site of the embedding page
	PageOrigin    string   // scheme://host[:port] of the page, never the full URL
	BeaconVersion string   // version of h3rum.js
	Partial       bool     // the page was hidden or closed before the run finished
	MainThreadMS  float64  // main-thread time the script itself used during the run, ms
	AltSvc        AltSvc   // what the page's own loads showed of the H3 origin before the run; AltSvcUnrecorded before wire v2
	Params        Params
	Client        Client
	ScriptErrors  ScriptErrors // the script's own failures in this run; zero from scripts before 1.3.0
	Samples       []Sample
}

// AltSvc says whether the browser could have learnt the H3 origin's
// Alt-Svc from the page's own loads before the run's first request to it
// (PROTOCOL.md, "alt"): the earliest load from the H3 origin that the page's
// Resource Timing buffer holds decides. Without one, the first request
// shows what the browser knew before the page (an HTTPS record or an
// Alt-Svc cached on an earlier visit); after the script's own load over TCP
// it shows what that load taught.
type AltSvc uint8

// The values of AltSvc, as the wire and the alt_svc columns carry them.
const (
	AltSvcUnrecorded AltSvc = iota // a report of wire v1: the script did not look
	AltSvcNone                     // no earlier load from the H3 origin on this page
	AltSvcScript                   // the script itself came from the H3 origin over TCP, with its Alt-Svc
	AltSvcOtherTCP                 // another earlier load from the H3 origin over TCP (h1 or h2)
	AltSvcH3                       // the earliest load from the H3 origin was already over HTTP/3
	AltSvcHidden                   // the earliest load's protocol was hidden (no Timing-Allow-Origin)
	// MaxAltSvc is the largest value the wire accepts.
	MaxAltSvc = AltSvcHidden
)

// ScriptErrors counts the exceptions the script caught in its own code
// during a run, by the stage it was in (PROTOCOL.md, "x"). A run with any
// may have ended early: it is reported with the samples it has.
type ScriptErrors struct {
	Idle   int // the run's sequence of requests (the idle callback that starts it)
	Warmup int // a warm-up request: its fetch, response or body
	Batch  int // a parallel request: its fetch, response or body
	Timing int // reading a request's Resource Timing entry and building its sample
	Send   int // building or sending the report
}

// Total is the number of errors of every kind.
func (e ScriptErrors) Total() int { return e.Idle + e.Warmup + e.Batch + e.Timing + e.Send }

// Params are the test parameters the run used.
type Params struct {
	Parallel int    // requests per parallel batch
	Warmup   int    // sequential warm-up requests to the H3 origin
	Bytes    int    // probe response body size
	Order    string // "h2first" or "h3first": which parallel batch started first
	Trigger  string // "load" or "manual"
	// Extra are the run's other design parameters (ScriptParam.design),
	// in canonical form: name=value pairs, joined by "," in the order of
	// the embedding's table, each left out at its default, as an absent
	// key in par means: "" is a run at every default, as is every run of
	// a script that reports none. Runs with other Extra measured something
	// else.
	Extra string
}

// Client is what the browser says about itself, where it says it.
type Client struct {
	Brands        []Brand // UA-CH brands (navigator.userAgentData), empty where unavailable
	Platform      string
	Mobile        bool
	EffectiveType string  // navigator.connection.effectiveType: "4g", "3g", …
	RTT           float64 // navigator.connection.rtt, ms (-1 unknown)
	Downlink      float64 // navigator.connection.downlink, Mbit/s (-1 unknown)
	Webdriver     bool    // navigator.webdriver
}

// Brand is one UA-CH brand and its major version.
type Brand struct {
	Brand   string
	Version string
}

// Sample is one probe request and what Resource Timing and the collector's
// Server-Timing said about it. Durations are milliseconds; a phase that did
// not happen (e.g. DNS on a reused connection) is 0; -1 means unknown.
type Sample struct {
	Seq          int   // order in the run, 0-based, unique within the run
	Phase        Phase // warm-up or parallel
	Want         Proto // origin the request was sent to: h2 or h3
	Got          Proto // normalised nextHopProtocol
	Start        float64
	Duration     float64
	DNS          float64
	Connect      float64 // TCP or QUIC connect, including TLS
	TLS          float64
	TTFB         float64 // requestStart → responseStart
	Download     float64 // responseStart → responseEnd
	Reused       bool    // connection was already open (connectStart == connectEnd)
	TransferSize int
	Server       ServerTiming
	Error        string // "" when the request succeeded; else a short code such as "timeout"
}
