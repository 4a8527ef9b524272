package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestColumnsMatchTable checks the one definition of a samples row against
// the table the migrations build: every column of one is in the other,
// with the same type.
func TestColumnsMatchTable(t *testing.T) {
	conn := storetest.DB(t)
	rows, err := conn.Query(context.Background(),
		"SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'samples'")
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
	defined := store.SampleColumnTypes()
	for name, typ := range defined {
		if got, ok := table[name]; !ok {
			t.Errorf("column %s is defined but not in the table", name)
		} else if got != typ {
			t.Errorf("column %s: table type %s, defined as %s", name, got, typ)
		}
	}
	for name := range table {
		if _, ok := defined[name]; !ok {
			t.Errorf("table column %s has no definition", name)
		}
	}
	if len(table) == 0 {
		t.Fatal("samples has no columns")
	}
}
