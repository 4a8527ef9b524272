package store

import (
	"strings"
	"testing"
)

// TestExistingRunsLocal checks that the cluster's look-ups read the
// server's own tables: the replacement depends on the SQL files' text.
func TestExistingRunsLocal(t *testing.T) {
	for _, tc := range []struct{ query, table string }{{existingRunsLocalSQL, "samples"}, {existingNELBatchesLocalSQL, "nel_reports"}} {
		if !strings.Contains(tc.query, "FROM "+tc.table+"_local\n") || strings.Contains(tc.query, "FROM "+tc.table+"\n") {
			t.Errorf("look-up on a cluster server's own %s table:\n%s", tc.table, tc.query)
		}
	}
}
