package queries

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "nel", part: completePart, cost: light,
		files: []string{"nel_failures.sql", "nel_protocols.sql", "nel_beacon.sql"},
		reads: []source{fromNEL, fromRaw},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			return nelSection(ctx, conn, &rep.opts, rep.win, rep)
		},
	})
}

// The NEL section: what browsers' Network Error Logging reported about the
// two origins (the nel_reports table), beside the beacon's own figures.
// NEL reports are about the origins, not a site's pages, so the section
// covers every site whatever the report's site filter.

// nelGroupings are the report's groupings nel_reports can answer, with
// the samples' expressions (query.GroupExpr: the columns have the same names);
// it has no connection type or collector, which fall back to continent,
// and the section says so in its By.
var nelGroupings = map[string]bool{"continent": true, "country": true, "subdivision": true, "asn": true, "browser": true, "none": true}

// nelRows runs the NEL query file name grouped by by (o's grouping, or
// its fallback) and hands every row to scan. The files over nel_reports
// count a report only under a fraction ingest accepts: rows stored before
// it refused smaller ones (a denormal weighs +Inf) are left out rather
// than spoil a week of reports.
func nelRows(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, name, by, what string, scan func(driver.Rows) error) error {
	st, err := prepare(name, o, w, func(s *query.Shape) { s.Group = query.GroupExpr(by) },
		clickhouse.Named("min_sampling_fraction", nel.MinSamplingFraction))
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, what, scan)
}

// nelSection fills rep.NEL.
func nelSection(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, rep *build) error {
	by := o.By
	if !nelGroupings[by] {
		by = "continent"
	}
	n := &model.NEL{By: by, Failures: []model.NELFailure{}, Protocols: []model.NELProtocol{}}
	err := nelRows(ctx, conn, o, w, "nel_failures.sql", by, "NEL failures", func(rows driver.Rows) error {
		var (
			f         model.NELFailure
			reports   uint64
			estimated float64
		)
		if err := rows.Scan(&f.Group, &f.Type, &f.Phase, &f.Proto, &reports, &estimated); err != nil {
			return err
		}
		f.Reports, f.Estimated = int(reports), model.Round3(estimated)
		n.Failures = append(n.Failures, f)
		return nil
	})
	if err != nil {
		return err
	}
	if n.Protocols, err = nelProtocols(ctx, conn, o, w, by); err != nil {
		return err
	}
	if err := model.CheckFinite(n); err != nil {
		return fmt.Errorf("NEL section: %w", err)
	}
	rep.NEL = n
	return nil
}

// nelProtocols is one entry per protocol that NEL or the beacon saw, by
// name: NEL's successes and failures, and beside its elapsed times the
// beacon's durations.
func nelProtocols(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, by string) ([]model.NELProtocol, error) {
	protos := map[string]*model.NELProtocol{}
	var order []string
	get := func(proto string) *model.NELProtocol {
		p := protos[proto]
		if p == nil {
			p = &model.NELProtocol{Proto: proto, Elapsed: []model.Percentile{}, Beacon: []model.Percentile{}}
			protos[proto] = p
			order = append(order, proto)
		}
		return p
	}
	err := nelRows(ctx, conn, o, w, "nel_protocols.sql", by, "NEL by protocol", func(rows driver.Rows) error {
		var (
			proto            string
			ok, probeOK      uint64
			okEst, failedEst float64
			q                []float32
		)
		if err := rows.Scan(&proto, &ok, &okEst, &failedEst, &probeOK, &q); err != nil {
			return err
		}
		p := get(proto)
		p.OKReports, p.OKEstimated, p.FailedEstimated, p.ProbeOKReports = int(ok), model.Round3(okEst), model.Round3(failedEst), int(probeOK)
		if ok > 0 {
			// Success sampling is on: the share of this protocol's
			// requests that failed, both sides estimated from samples.
			s := math.Round(failedEst/(failedEst+okEst)*1e6) / 1e6
			p.FailureShare = &s
		}
		if probeOK > 0 {
			p.Elapsed = levels(q)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The beacon's side scans every successful request of the window: only
	// worth it when NEL has elapsed times to set beside it.
	if slices.ContainsFunc(order, func(proto string) bool { return protos[proto].ProbeOKReports > 0 }) {
		err = nelRows(ctx, conn, o, w, "nel_beacon.sql", by, "beacon durations beside NEL", func(rows driver.Rows) error {
			var (
				proto string
				cnt   uint64
				q     []float32
			)
			if err := rows.Scan(&proto, &cnt, &q); err != nil {
				return err
			}
			p := get(proto)
			p.BeaconSamples, p.Beacon = int(cnt), levels(q)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(order)
	out := []model.NELProtocol{}
	for _, proto := range order {
		out = append(out, *protos[proto])
	}
	return out, nil
}
