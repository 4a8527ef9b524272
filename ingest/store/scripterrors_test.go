package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// A run's script errors (the report's x) are stored by kind in every row of
// the run; a run without them stores zeros.
func TestInsertScriptErrors(t *testing.T) {
	conn := storetest.DB(t)
	failed, clean := storetest.Run(t, "s"), storetest.Run(t, "s")
	failed.Report.ScriptErrors = beacon.ScriptErrors{Idle: 1, Warmup: 2, Batch: 3, Timing: 4, Send: beacon.MaxScriptErrors}
	var b store.Batch
	b.Add(&failed)
	b.Add(&clean)
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		run  store.Run
		want string
	}{{failed, "1 2 3 4 65535"}, {clean, "0 0 0 0 0"}} {
		var got string
		q := fmt.Sprintf("SELECT concat(toString(min(script_errors_idle)), ' ', toString(min(script_errors_warmup)), ' ', "+
			"toString(min(script_errors_batch)), ' ', toString(min(script_errors_timing)), ' ', toString(max(script_errors_send))) "+
			"FROM samples WHERE run_id = toUUID('%s')", uuid.UUID(tt.run.Report.RunID))
		if err := conn.QueryRow(context.Background(), q).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("stored script errors %q, want %q", got, tt.want)
		}
	}
}
