package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestReportBaselineFlags: a bad baseline window is a usage error (exit 2,
// one line naming it) before any store is opened.
func TestReportBaselineFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--baseline-until", "soon"}, "baseline_until"},
		{[]string{"--baseline-since", "whenever"}, "baseline_since"},
		{[]string{"--since", "1h", "--baseline-since", "1h", "--baseline-until", "2h"}, "is empty"},
		{[]string{"--since", "1h", "--baseline-since", "3h", "--format", "csv"}, "--format csv"},
	} {
		var errOut bytes.Buffer
		err := run(context.Background(), append([]string{"report", "--clickhouse", "clickhouse://127.0.0.1:1/none"}, c.args...), io.Discard, &errOut)
		code := exitCode(err, &errOut)
		msg := strings.TrimSpace(errOut.String())
		if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("report %v: exit %d, stderr %q; want 2 and one line naming %q", c.args, code, msg, c.want)
		}
	}
}
