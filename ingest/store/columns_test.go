package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestColumnsMatchTable checks each table's one definition of a row
// (samples, nel_reports) against the table the migrations build: every
// column of one is in the other, with the same type.
func TestColumnsMatchTable(t *testing.T) {
	conn := storetest.DB(t)
	for _, tc := range []struct {
		table   string
		defined map[string]string
	}{
		{"samples", store.SampleColumnTypes()},
		{"nel_reports", store.NELColumnTypes()},
	} {
		t.Run(tc.table, func(t *testing.T) {
			rows, err := conn.Query(context.Background(),
				"SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = ?", tc.table)
			if err != nil {
				t.Fatal(err)
			}
			table := map[string]string{}
			for rows.Next() {
				var name, typ string
				if err := rows.Scan(&name, &typ); err != nil {
					t.Fatal(err)
				}
				table[name] = typ
			}
			rows.Close()
			if len(table) == 0 {
				t.Fatalf("%s has no columns", tc.table)
			}
			for name, typ := range tc.defined {
				if got, ok := table[name]; !ok {
					t.Errorf("column %s is defined but not in the table", name)
				} else if got != typ {
					t.Errorf("column %s: table type %s, defined as %s", name, got, typ)
				}
			}
			for name := range table {
				if _, ok := tc.defined[name]; !ok {
					t.Errorf("table column %s has no definition", name)
				}
			}
		})
	}
}
