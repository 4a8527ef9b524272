package queries

import (
	"context"
	"math"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func init() {
	register(section{
		name: "handshakes", part: completePart, cost: light,
		files: []string{"handshakes.sql"},
		reads: []source{fromRaw},
		run: func(ctx context.Context, rep *Report, conn driver.Conn) error {
			return handshakes(ctx, conn, &rep.opts, rep.win, rep.groups.get)
		},
	})
}

// Handshake is one protocol's requests on new connections in a group: what
// a first request costs (sql/handshakes.sql). It is kept apart from the
// headline, which compares warm connections only.
type Handshake struct {
	Proto        string       `json:"proto"`          // protocol the request used: h2 or h3
	Kind         string       `json:"kind,omitempty"` // agent reports: full, resumed or 0rtt (the server's word); browsers: none
	Samples      int          `json:"samples"`
	Percentiles  []Percentile `json:"percentiles"`         // request duration, ms; no intervals
	ConnectMS    []Percentile `json:"connect_percentiles"` // connection set-up (TCP+TLS, or QUIC), ms
	FastestMS    float64      `json:"fastest_ms"`          // the quickest request's duration: the path's and the protocol's floor
	ResumedShare float64      `json:"resumed_share"`       // TLS session resumed
	EarlyShare   float64      `json:"early_data_share"`    // sent as 0-RTT early data
	// Retried counts the requests whose connection paid a QUIC Retry's
	// round trip (Server-Timing retry), left out of every figure above.
	Retried int `json:"retried"`
}

// handshakes reads every group's requests on new connections.
func handshakes(ctx context.Context, conn driver.Conn, o *Options, w window, get func(string) *Group) error {
	st, err := prepare("handshakes.sql", o, w, nil)
	if err != nil {
		return err
	}
	return st.each(ctx, conn, "handshakes", func(rows driver.Rows) error {
		var (
			grp, proto     string
			kind           string
			n, retried     uint64
			qs, qc         []float32
			fastest        float32
			resumed, early float64
		)
		if err := rows.Scan(&grp, &proto, &kind, &n, &qs, &qc, &fastest, &resumed, &early, &retried); err != nil {
			return err
		}
		g := get(grp)
		g.Handshakes = append(g.Handshakes, Handshake{Proto: proto, Kind: kind, Samples: int(n), Percentiles: levels(qs), ConnectMS: levels(qc), FastestMS: round3(float64(fastest)),
			ResumedShare: math.Round(resumed*1e6) / 1e6, EarlyShare: math.Round(early*1e6) / 1e6, Retried: int(retried)})
		return nil
	})
}

// levels pairs quantile values with the report's percentiles.
func levels(qs []float32) []Percentile {
	out := make([]Percentile, len(percentiles))
	for i, p := range percentiles {
		out[i].P = p
		if i < len(qs) && !math.IsNaN(float64(qs[i])) {
			out[i].MS = round3(float64(qs[i]))
		}
	}
	return out
}
