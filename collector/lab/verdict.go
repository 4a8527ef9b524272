package lab

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/h3rum/h3rum/queries/model"
)

// The self-check: what the lab's reports must show, given what it injected.
// Pure functions of the regions, the reports and the visits' outcome, so
// that they are tested without root (verdict_test.go).

// HeavyLossPct is the loss, in % in either direction, from which a lost
// segment stalls all of HTTP/2's requests on its connection and requests
// may time out: medians, fallbacks and availability are shown there, not
// checked, and HTTP/3's tail is compared with HTTP/2's.
const HeavyLossPct = 3

// SelfCheck's defaults for its zero fields.
const (
	DefaultTolerance = 0.15 // SelfCheck.Tolerance
	DefaultMinVisits = 2    // SelfCheck.MinVisits
)

// SelfCheck compares the lab's reports with the truth. The zero value
// takes DefaultTolerance and DefaultMinVisits.
type SelfCheck struct {
	// Tolerance is the share by which a warm median may differ from the
	// injected round trip plus the calibrated overhead. 0 means
	// DefaultTolerance.
	Tolerance float64
	// MinVisits is the fewest stored visits of an engine a region needs
	// for its checks: failed visits are counted and reported, and fail the
	// region only below it. 0 means DefaultMinVisits.
	MinVisits int
}

// Pass is one engine's visits: its report (by continent, over its own
// window), the visits planned and those whose run never arrived, per
// region name.
type Pass struct {
	Engine  string
	Timed   bool // timings checked (the first engine's); others show them
	Planned map[string]int
	Failed  map[string]int
	Report  *model.Report
}

// Observed is a region with what the emulator measured of itself.
type Observed struct {
	Region
	UpStats, DownStats Stats
	// AgentUp and AgentDown are the emulator's own delay during the
	// agent's runs alone (Lateness.After); zero Counts: not measured.
	AgentUp, AgentDown Lateness
}

// RTT is the region's injected round trip, ms.
func (r Region) RTT() float64 { return r.Up.DelayMS + r.Down.DelayMS }

// LossPct is the region's loss in its lossier direction, in %.
func (r Region) LossPct() float64 { return max(r.Up.LossPct, r.Down.LossPct) }

// OwnMS is the emulator's own mean delay over both directions, ms.
func (o Observed) OwnMS() float64 {
	return float64(o.UpStats.Late.Mean+o.DownStats.Late.Mean) / 1e6
}

// AgentOwnMS is the emulator's own mean delay over both directions while
// the agent ran, ms: the browsers' visits load the machine far more than
// the agent does, and the whole run's mean would overstate it. OwnMS where
// that phase was not measured.
func (o Observed) AgentOwnMS() float64 {
	if o.AgentUp.Count == 0 || o.AgentDown.Count == 0 {
		return o.OwnMS()
	}
	return float64(o.AgentUp.Mean+o.AgentDown.Mean) / 1e6
}

// RegionVerdict is one region's checks in words, and whether all passed.
type RegionVerdict struct {
	Region string
	Pass   bool
	Notes  []string
}

// Result is the whole self-check.
type Result struct {
	Lines   []string // calibration and how each check is judged
	Regions []RegionVerdict
}

// OK reports whether every region passed.
func (r Result) OK() bool {
	for _, v := range r.Regions {
		if !v.Pass {
			return false
		}
	}
	return true
}

// Write prints the result, one line per region.
func (r Result) Write(out io.Writer, regions []Observed) {
	for _, l := range r.Lines {
		fmt.Fprintln(out, l)
	}
	for i, v := range r.Regions {
		verdict := "PASS"
		if !v.Pass {
			verdict = "FAIL"
		}
		own := fmt.Sprintf("%.2f ms", regions[i].OwnMS())
		if r := regions[i]; r.AgentUp.Count > 0 && r.AgentDown.Count > 0 {
			own += fmt.Sprintf(" (%.2f ms while the agent ran)", r.AgentOwnMS())
		}
		fmt.Fprintf(out, "  %-12s %s  round trip %.0f ms, emulator's own %s: %s\n", v.Region, verdict, regions[i].RTT(), own, strings.Join(v.Notes, "; "))
	}
}

func (s SelfCheck) withDefaults() SelfCheck {
	if s.Tolerance == 0 {
		s.Tolerance = DefaultTolerance
	}
	if s.MinVisits == 0 {
		s.MinVisits = DefaultMinVisits
	}
	return s
}

// calibration is the lossless region with the shortest round trip, and
// the overhead beyond it of browser, server and emulator per protocol.
type calibration struct {
	region string
	over   [2]float64 // h2, h3
	noise  [2]float64 // half the width of its medians' 95 % intervals, h2, h3
}

// Calibrate finds, in a pass's report, the lossless region with the
// shortest round trip that has both protocols, and the overhead its warm
// medians show beyond the round trip. ok is false without one.
func Calibrate(regions []Observed, rep *model.Report) (region string, overH2, overH3 float64, ok bool) {
	groups := GroupsOf(rep)
	var best *Observed
	for i := range regions {
		r := &regions[i]
		g := groups[r.Continent]
		if r.BlockUDP || r.Up.LossPct > 0 || r.Down.LossPct > 0 || g == nil || g.H2 == nil || g.H3 == nil {
			continue
		}
		if best == nil || r.RTT() < best.RTT() {
			best = r
		}
	}
	if best == nil {
		return "", 0, 0, false
	}
	g := groups[best.Continent]
	return best.Name, at(g.H2, 50) - best.RTT(), at(g.H3, 50) - best.RTT(), true
}

// Judge runs every check: per region, each pass's browser checks (the
// first pass's unprefixed, others prefixed with the engine) and, with an
// agent report, the agent's.
//
// A warm request costs one round trip plus what the browser, the server
// and the emulator add (Chromium's own alone is more than any tolerance
// at a short round trip). The lossless region with the shortest
// round trip calibrates that overhead, per engine and protocol.
func (s SelfCheck) Judge(regions []Observed, passes []Pass, agent *model.Report) Result {
	s = s.withDefaults()
	var res Result
	calibs := make([]calibration, len(passes))
	for i, p := range passes {
		if name, h2, h3, ok := Calibrate(regions, p.Report); ok {
			calibs[i] = calibration{region: name, over: [2]float64{h2, h3}}
			for _, r := range regions {
				if g := GroupsOf(p.Report)[r.Continent]; r.Name == name && g != nil {
					calibs[i].noise = [2]float64{halfWidth(g.H2, 50), halfWidth(g.H3, 50)}
				}
			}
			res.Lines = append(res.Lines, fmt.Sprintf("calibration: region %s puts the overhead of browser (%s), server and emulator at %.1f ms (h2) and %.1f ms (h3)",
				name, p.Engine, h2, h3))
		}
	}
	res.Lines = append(res.Lines, fmt.Sprintf("self-check (warm medians within %.0f %% of the injected round trip plus that overhead, or within their own and the calibration's measured noise where that is wider; the agent's fastest handshakes, less their calibrated base, within %.0f %% of 2, 1 and 3 round trips; a comparison of the protocols asserted only where the runs can detect the expected effect, by the report's power rule):", 100*s.Tolerance, 100*s.Tolerance))
	agentGroups := GroupsOf(agent)
	agentCal, agentCalibrated := calibrateAgent(regions, agentGroups)
	if agent != nil && agentCalibrated {
		res.Lines = append(res.Lines, fmt.Sprintf("agent calibration: region %s puts the agent's and the server's own time at %.1f ms (h2) and %.1f ms (h3) on a warm request",
			agentCal.region, agentCal.warm["h2"], agentCal.warm["h3"]))
	}
	for _, r := range regions {
		v := RegionVerdict{Region: r.Name, Pass: true}
		for i, p := range passes {
			prefix := ""
			if i > 0 {
				prefix = p.Engine + " "
			}
			c := checker{v: &v, prefix: prefix}
			planned := p.Planned[r.Name]
			s.browser(GroupsOf(p.Report)[r.Continent], r, planned-p.Failed[r.Name], planned, calibs[i], p.Timed, &c)
			firstContact(p.Report, r, &c)
		}
		if agent != nil {
			s.agent(agentGroups[r.Continent], r, agentCal, agentCalibrated, &checker{v: &v})
		}
		res.Regions = append(res.Regions, v)
	}
	return res
}

// checker collects one region's notes: a check passes or fails it, a note
// only shows.
type checker struct {
	v      *RegionVerdict
	prefix string
}

func (c *checker) check(ok bool, format string, a ...any) {
	mark := "ok"
	if !ok {
		mark, c.v.Pass = "FAILED", false
	}
	c.v.Notes = append(c.v.Notes, c.prefix+fmt.Sprintf(format, a...)+" "+mark)
}

func (c *checker) note(format string, a ...any) {
	c.v.Notes = append(c.v.Notes, c.prefix+fmt.Sprintf(format, a...))
}

// firstContact checks that no run of region r reads as knowing HTTP/3
// before the page: every lab visit is a fresh profile and the lab
// publishes no HTTPS record, so a first request over h3 can only have
// learnt it from the page's own loads (the report's h3_from_page).
func firstContact(rep *model.Report, r Observed, c *checker) {
	if rep == nil || rep.FirstContact == nil {
		return
	}
	for _, g := range rep.FirstContact.Groups {
		if g.Group == r.Continent {
			c.check(g.KnownBefore == 0, "first contact: %d of %d runs first on h3 known before the page (fresh profiles, no HTTPS record: want 0; %d from the page)",
				g.KnownBefore, g.H3First, g.FromPage)
		}
	}
}

// TailP is the percentile at which HTTP/3's tail is compared with
// HTTP/2's under heavy loss.
const TailP = 90

// browser checks one engine's visits of one region: enough stored (failed
// ones counted, not fatal), the warm medians against the round trip plus
// the calibrated overhead (or, where UDP is blocked, no HTTP/3 at all),
// HTTP/3's p90 below HTTP/2's at heavy loss where the runs can detect it,
// and where UDP passes below heavy loss (where a timeout or a fallback is
// loss rather than a blocked path or a broken lab) no fallback to TCP and
// HTTP/3 availability 100 %.
// With timed false the timings are shown, not checked: a second engine's
// overhead, from a handful of visits, varies by tens of milliseconds.
func (s SelfCheck) browser(g *model.Group, r Observed, stored, planned int, calib calibration, timed bool, c *checker) {
	if stored == planned {
		c.check(true, "visits stored %d/%d", stored, planned)
	} else {
		need := min(s.MinVisits, planned)
		c.check(stored >= need, "visits stored %d/%d (%d failed, counted; the checks need %d)", stored, planned, planned-stored, need)
	}
	switch {
	case g == nil:
		c.check(false, "no samples in the report")
		return
	case r.BlockUDP:
		avail := -1.0
		if g.Availability != nil {
			avail = g.Availability.Share
		}
		c.check(g.H3 == nil && avail == 0, "UDP blocked: HTTP/3 availability %.0f %% (want 0)", 100*avail)
	case r.Name == calib.region:
		c.note("calibration")
	default:
		for k, p := range []struct {
			name string
			st   *model.Stats
		}{{"h2", g.H2}, {"h3", g.H3}} {
			if p.st == nil {
				c.check(false, "%s: none", p.name)
				continue
			}
			if calib.region == "" {
				c.check(false, "%s: no lossless region to calibrate with", p.name)
				continue
			}
			want := r.RTT() + calib.over[k]
			switch {
			case r.LossPct() >= HeavyLossPct:
				c.note("%s p50 %.1f ms (%.1f without loss; not checked under loss)", p.name, at(p.st, 50), want)
			case !timed:
				c.note("%s p50 %.1f ms (%.1f expected; not checked)", p.name, at(p.st, 50), want)
			default:
				// A few visits' medians move by more than the tolerance on a
				// busy machine: the check allows what both medians' own
				// intervals say they may be off by, and says so.
				allowed := s.Tolerance * want
				noise := halfWidth(p.st, 50) + calib.noise[k]
				how := fmt.Sprintf("± %.0f %%", 100*s.Tolerance)
				if noise > allowed {
					allowed, how = noise, fmt.Sprintf("± %.1f ms, the medians' measured noise", noise)
				}
				c.check(math.Abs(at(p.st, 50)-want) <= allowed, "%s p50 %.1f ms (want %.1f %s)", p.name, at(p.st, 50), want, how)
			}
		}
		if timed && r.LossPct() >= HeavyLossPct && g.H2 != nil && g.H3 != nil {
			tail(g, r, c)
		}
	}
	if !r.BlockUDP {
		fb := g.Excluded["fallback"]
		if g.WantedH3GotH2 != nil {
			fb = max(fb, g.WantedH3GotH2.Runs)
		}
		if r.LossPct() >= HeavyLossPct {
			// A browser that loses its QUIC handshake's packets falls back
			// to TCP, as it should: a finding of the path, not of the lab.
			c.note("runs with a fallback to TCP %d (not checked under loss)", fb)
		} else {
			c.check(fb == 0, "runs with a fallback to TCP %d", fb)
		}
		if g.Availability != nil {
			if r.LossPct() >= HeavyLossPct {
				c.note("HTTP/3 availability %.0f %% (not checked under loss)", 100*g.Availability.Share)
			} else {
				c.check(g.Availability.Share == 1, "HTTP/3 availability %.0f %%", 100*g.Availability.Share)
			}
		}
	}
}

// ExpectedTailEffect is the difference at TailP the lab expects under
// heavy loss, ms: a lost segment costs HTTP/2 at least one more round trip
// for every request on its connection, HTTP/3 only for the stream it
// carried.
func ExpectedTailEffect(r Region) float64 { return r.RTT() }

// Power decides, by the report's power rule (queries.VerdictRule), whether
// a group's runs can detect an effect of effectMS at p: asserted, or why
// not in words.
func Power(g *model.Group, p, effectMS float64) (asserted bool, why string) {
	v := model.VerdictRule{P: p, EffectMS: effectMS, MinRuns: 1}.Judge(g)
	mde, ok := v.MDEAt(v.Runs)
	if !ok {
		return false, fmt.Sprintf("not asserted: no interval at p%.0f with %d runs (the report needs %d)", p, v.Runs, v.RunsForInterval)
	}
	if mde > effectMS {
		n, _ := v.RunsToDetect(effectMS)
		return false, fmt.Sprintf("not asserted: MDE %.0f ms > expected effect %.0f ms with %d runs (%d would detect it)", mde, effectMS, v.Runs, n)
	}
	return true, fmt.Sprintf("asserted: MDE %.0f ms ≤ expected effect %.0f ms with %d runs", mde, effectMS, v.Runs)
}

// tail compares HTTP/3's tail with HTTP/2's under heavy loss, asserted
// only where the runs have the power to see the expected effect.
func tail(g *model.Group, r Observed, c *checker) {
	h2, h3 := at(g.H2, TailP), at(g.H3, TailP)
	asserted, why := Power(g, TailP, ExpectedTailEffect(r.Region))
	if asserted {
		c.check(h3 < h2, "under loss, h3 p%d %.1f < h2 p%d %.1f (%s)", TailP, h3, TailP, h2, why)
		return
	}
	c.note("under loss, h3 p%d %.1f, h2 p%d %.1f (%s)", TailP, h3, TailP, h2, why)
}

// agentHandshakes are the handshakes the lab checks, with the round trips
// each should take on a path with round trip R: QUIC's full handshake and
// request 2R, QUIC 0-RTT 1R, TCP + TLS 1.3 and request 3R.
var agentHandshakes = []struct {
	proto, kind string
	trips       float64
}{{"h3", "full", 2}, {"h3", "0rtt", 1}, {"h2", "full", 3}}

// agentCalibration is what the agent's requests cost beyond the path in
// the lossless region with the shortest round trip that has agent runs of
// both protocols: the client's, the server's and the crypto's time, with
// the emulator's own delay taken out. A region's warm median is then
// expected at its path (round trip plus emulator's own delay) plus warm,
// and a handshake's fastest request at trips × path plus base[kind].
type agentCalibration struct {
	region string
	warm   map[string]float64 // by protocol
	base   map[string]float64 // by "proto kind"
}

// calibrateAgent finds the agent's calibration; ok is false without a
// lossless region that has agent runs of both protocols.
func calibrateAgent(regions []Observed, groups map[string]*model.Group) (agentCalibration, bool) {
	var best *Observed
	for i := range regions {
		r := &regions[i]
		g := groups[r.Continent]
		if r.BlockUDP || r.LossPct() > 0 || g == nil || g.H2 == nil || g.H3 == nil {
			continue
		}
		if best == nil || r.RTT() < best.RTT() {
			best = r
		}
	}
	if best == nil {
		return agentCalibration{}, false
	}
	g, path := groups[best.Continent], best.RTT()+best.AgentOwnMS()
	cal := agentCalibration{region: best.Name, warm: map[string]float64{"h2": at(g.H2, 50) - path, "h3": at(g.H3, 50) - path},
		base: map[string]float64{}}
	for _, want := range agentHandshakes {
		if h := handshakeOf(g, want.proto, want.kind); h != nil && h.FastestMS > 0 {
			cal.base[want.proto+" "+want.kind] = h.FastestMS - want.trips*path
		}
	}
	return cal, true
}

// handshakeOf is g's handshake of proto and kind, nil without one.
func handshakeOf(g *model.Group, proto, kind string) *model.Handshake {
	for i := range g.Handshakes {
		if h := &g.Handshakes[i]; h.Proto == proto && h.Kind == kind {
			return h
		}
	}
	return nil
}

// agent checks one region's agent runs: HTTP/3 availability (all where UDP
// passes below heavy loss, none where it is blocked), and on a lossless
// path long enough to time (round trip ≥ 10 ms) the warm medians and the
// handshakes' round trips, within the tolerance. The path is the injected
// round trip plus the emulator's own delay; the agent adds no browser.
//
// A handshake is judged by its fastest request: queueing behind the lab's
// other work and a busy CPU only ever add to a request, while an extra or
// a missing round trip shows in every one. With a calibration (another,
// shorter lossless region) the warm medians are expected at the path plus
// the calibrated overhead and a handshake's round trips are its fastest
// request less the calibrated base, over the path; without one, the warm
// medians at the path and the handshakes less the overhead the region's
// own warm medians show beyond it. The calibration region's own handshakes
// are shown, not judged: they are the base.
func (s SelfCheck) agent(g *model.Group, r Observed, cal agentCalibration, calibrated bool, c *checker) {
	if g == nil {
		c.check(false, "agent: no runs in the report")
		return
	}
	avail := -1.0
	if g.Availability != nil {
		avail = g.Availability.Share
	}
	switch {
	case r.BlockUDP:
		c.check(avail == 0, "agent HTTP/3 availability %.0f %% (want 0)", 100*avail)
	case r.LossPct() >= HeavyLossPct:
		c.note("agent HTTP/3 availability %.0f %% (not checked under loss)", 100*avail)
	default:
		c.check(avail == 1, "agent HTTP/3 availability %.0f %%", 100*avail)
	}
	if r.RTT() < 10 {
		c.note("agent: round trip too short to time handshakes against")
		return
	}
	calibrates := calibrated && cal.region == r.Name
	calibrated = calibrated && !calibrates
	path := r.RTT() + r.AgentOwnMS()
	lossy := r.LossPct() >= 1
	over := map[string]float64{}
	for _, p := range []struct {
		name string
		st   *model.Stats
	}{{"h2", g.H2}, {"h3", g.H3}} {
		if p.st == nil || lossy {
			continue
		}
		p50, want := at(p.st, 50), path
		if calibrated {
			want += cal.warm[p.name]
		}
		c.check(math.Abs(p50-want) <= s.Tolerance*want, "agent %s warm p50 %.1f ms (want %.1f)", p.name, p50, want)
		over[p.name] = max(0, p50-path)
	}
	for _, want := range agentHandshakes {
		if r.BlockUDP && want.proto == "h3" {
			continue
		}
		label := want.proto + " " + want.kind
		got := handshakeOf(g, want.proto, want.kind)
		if got == nil {
			c.check(false, "agent %s: none", label)
			continue
		}
		if lossy {
			c.note("agent %s p50 %.2fR (loss: not checked)", label, msAt(got.Percentiles, 50)/path)
			continue
		}
		if calibrates {
			c.note("agent %s fastest %.1f ms (%.1f ms over %.0fR: the base the other regions are judged by)", label, got.FastestMS, cal.base[label], want.trips)
			continue
		}
		base, basis := over[want.proto], "the region's own request overhead"
		if b, ok := cal.base[label]; calibrated && ok {
			base, basis = b, "region "+cal.region+"'s base"
		}
		trips := (got.FastestMS - base) / path
		c.check(math.Abs(trips-want.trips) <= s.Tolerance*want.trips, "agent %s fastest %.2fR after %.1f ms, %s (want %.0fR)",
			label, trips, base, basis, want.trips)
	}
}

// GroupsOf indexes a report's groups by name; empty for no report.
func GroupsOf(rep *model.Report) map[string]*model.Group {
	m := map[string]*model.Group{}
	if rep != nil {
		for i := range rep.Groups {
			m[rep.Groups[i].Group] = &rep.Groups[i]
		}
	}
	return m
}

// at is s's percentile p in ms, NaN where the report has none.
func at(s *model.Stats, p float64) float64 { return msAt(s.Percentiles, p) }

// halfWidth is half the width of s's 95 % interval at percentile p, 0
// where it has none.
func halfWidth(s *model.Stats, p float64) float64 {
	if s == nil {
		return 0
	}
	for _, q := range s.Percentiles {
		if q.P == p && q.CILowMS != nil && q.CIHighMS != nil {
			return (*q.CIHighMS - *q.CILowMS) / 2
		}
	}
	return 0
}

// msAt is the percentile p of ps in ms, NaN where ps has none: looked up
// by level, never by its place in the list.
func msAt(ps []model.Percentile, p float64) float64 {
	for _, q := range ps {
		if q.P == p {
			return q.MS
		}
	}
	return math.NaN()
}
