package queries

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
)

// TestReportNotFinite: a report holding a number JSON cannot carry is
// refused where it leaves, with a reason naming it: the HTML report is
// not written (/api/report's answer: TestReportNotFinite in queries/api).
func TestReportNotFinite(t *testing.T) {
	bad := func() *model.Report {
		share := math.NaN()
		r := &model.Report{By: "continent", Percentiles: percentiles[:], Groups: []model.Group{}, Timeline: []model.Hour{}, Verdicts: []model.Verdict{},
			NEL: &model.NEL{By: "continent", Failures: []model.NELFailure{},
				Protocols: []model.NELProtocol{{Proto: "h2"}, {Proto: "h3", FailedEstimated: math.Inf(1), FailureShare: &share}}}}
		r.Finish(nil, model.Options{}, true)
		return r
	}
	const reason = "nel.protocols[1].failed_estimated_requests is +Inf"
	if err := writeHTML(&bytes.Buffer{}, bad()); err == nil || !strings.Contains(err.Error(), reason) {
		t.Errorf("render.HTML of a report with +Inf: %v, want an error naming %s", err, reason)
	}
	// Where it is built: Run, Estimate and AddRuns end with this check.
	if err := (&build{Report: bad()}).checkFinite(); err == nil || !strings.Contains(err.Error(), "computing the report: "+reason) {
		t.Errorf("checkFinite of a report with +Inf: %v", err)
	}
}
