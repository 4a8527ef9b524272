package queries

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/internal/synth"
)

func TestSmoke(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 1, Runs: 3000})
	load(t, conn, rows)
	for _, src := range []Source{SourceRaw, SourceRollup} {
		rep, err := Run(context.Background(), conn, Options{Since: time.Date(2025, 1, 1, 0, 30, 0, 0, time.UTC), Until: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC), Source: src})
		if err != nil {
			t.Fatal(err)
		}
		rep.Timeline = nil
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", " ")
		e.Encode(rep.Groups[0])
	}
}
