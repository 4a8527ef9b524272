package store

import (
	"strings"
	"testing"
)

// TestExistingRunsLocal checks that the cluster's look-up reads the
// server's own samples table: the replacement depends on the SQL file's
// text.
func TestExistingRunsLocal(t *testing.T) {
	if !strings.Contains(existingRunsLocalSQL, "FROM samples_local\n") || strings.Contains(existingRunsLocalSQL, "FROM samples\n") {
		t.Errorf("existing runs on a cluster server's own table:\n%s", existingRunsLocalSQL)
	}
}
