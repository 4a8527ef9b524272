package query

import "time"

// fineSlot is the five-minute twins' slot (store's fiveMinuteTables).
const fineSlot = 5 * time.Minute

// Window is the report window in the forms the SQL files bind.
type Window struct {
	since, until     uint32 // unix seconds
	hourFrom, hourTo uint32 // the rollup's hours: [hourFrom, hourTo)
	// The five-minute twins' slots at the edges, [fineA0, fineA1) and
	// [fineB0, fineB1), and the raw edges around them, [edgeA0, edgeA1)
	// and [edgeB0, edgeB1): less than five minutes each.
	fineA0, fineA1, fineB0, fineB1 uint32
	edgeA0, edgeA1, edgeB0, edgeB1 uint32
}

// NewWindow splits [since, until) into the rollup's whole hours, the
// whole five minutes of the partial hours at either edge, which come from
// the rollup's five-minute twins, and the minutes left at either end,
// which are read from unaggregated rows. A window that runs to the present
// (until at or after now) takes its last, current hour from the rollup
// too: it holds every row stored so far, so nothing later than until
// unless stored since now (the moment the report began), and reading that
// hour's rows otherwise is the costlier half of the point estimates.
func NewWindow(since, until, now time.Time) Window {
	w := Window{since: uint32(since.Unix()), until: uint32(until.Unix())}
	from := ceil(since, time.Hour)
	to := until.Truncate(time.Hour)
	empty := func() (uint32, uint32) { return w.until, w.until }
	switch {
	case to.Before(until) && !until.Before(now) && to.After(from):
		to = to.Add(time.Hour) // the current hour, whole in the rollup so far
		w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
		w.edgeA0, w.edgeA1, w.fineA0, w.fineA1, _, _ = split(since, from)
		w.fineB0, w.fineB1 = empty()
		w.edgeB0, w.edgeB1 = empty()
	case !to.After(from):
		// No whole hour inside: its whole five minutes and the minutes
		// around them.
		w.hourFrom, w.hourTo = w.since, w.since
		w.edgeA0, w.edgeA1, w.fineA0, w.fineA1, w.edgeB0, w.edgeB1 = split(since, until)
		w.fineB0, w.fineB1 = empty()
	default:
		w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
		w.edgeA0, w.edgeA1, w.fineA0, w.fineA1, _, _ = split(since, from)
		_, _, w.fineB0, w.fineB1, w.edgeB0, w.edgeB1 = split(to, until)
	}
	return w
}

// split splits [a, b) into the minutes before its first five-minute
// boundary, its whole five minutes and the minutes after them, each as
// bounds [from, to) in unix seconds (empty where from = to).
func split(a, b time.Time) (rawA0, rawA1, fine0, fine1, rawB0, rawB1 uint32) {
	c := ceil(a, fineSlot)
	if c.After(b) {
		c = b
	}
	d := b.Truncate(fineSlot)
	if d.Before(c) {
		d = c
	}
	u := func(t time.Time) uint32 { return uint32(t.Unix()) }
	return u(a), u(c), u(c), u(d), u(d), u(b)
}

// ceil is t rounded up to a multiple of d.
func ceil(t time.Time, d time.Duration) time.Time {
	if c := t.Truncate(d); c.Before(t) {
		return c.Add(d)
	}
	return t
}
