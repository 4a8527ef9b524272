package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
)

// TestHTMLReportNeedsCompleteReport: an estimate has no verdicts or
// charts to show, and is refused with the reason.
func TestHTMLReportNeedsCompleteReport(t *testing.T) {
	err := HTML(&bytes.Buffer{}, &model.Report{})
	if err == nil || !strings.Contains(err.Error(), "complete report") {
		t.Errorf("HTML of an incomplete report: %v", err)
	}
}
