package query

import "time"

// Window is the report window in the forms the SQL files bind.
type Window struct {
	since, until           uint32 // unix seconds
	hourFrom, hourTo       uint32 // the rollup's hours: [hourFrom, hourTo)
	edgeA0, edgeA1, edgeB0 uint32 // raw edges [since, hourFrom) and [hourTo, until)
	edgeB1                 uint32
}

// NewWindow splits [since, until) into the rollup's whole hours and the
// partial hours at either edge, which are read from unaggregated rows. A window that
// runs to the present (until at or after now) takes its last, current
// hour from the rollup too: it holds every row stored so far, so nothing
// later than until unless stored since now (the moment the report began),
// and reading that hour's raw rows instead is the costlier half of the
// point estimates.
func NewWindow(since, until, now time.Time) Window {
	w := Window{since: uint32(since.Unix()), until: uint32(until.Unix())}
	from := since.Truncate(time.Hour)
	if from.Before(since) {
		from = from.Add(time.Hour)
	}
	to := until.Truncate(time.Hour)
	if to.Before(until) && !until.Before(now) && to.After(from) {
		to = to.Add(time.Hour) // the current hour, whole in the rollup so far
		w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
		w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.hourFrom, w.until, w.until
		return w
	}
	if !to.After(from) {
		// No whole hour inside: everything comes from raw rows.
		w.hourFrom, w.hourTo = w.since, w.since
		w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.until, w.until, w.until
		return w
	}
	w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
	w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.hourFrom, w.hourTo, w.until
	return w
}
