package store_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
)

var record = flag.Bool("record", false, "append the migration steps not yet in testdata/released_steps.txt")

// releasedSteps is the record of what every migration step ran when it was
// released: testdata/released_steps.txt, one statement a line as
// "<stream>/<file>\t<statement>", with comments dropped and white space
// folded (cluster steps with /*CLUSTER*/ and /*DATABASE*/ unfilled). It
// only grows: a released step never changes what it does, and the tests
// build the databases of earlier releases from it.
const releasedSteps = "testdata/released_steps.txt"

// step is one migration step as the record holds it.
type step struct {
	Name       string // "migrations/0001_samples.sql", "cluster/0001_samples_local.sql"
	Statements []string
	Retired    bool // an embedded step that says it was retired
}

// readRecord returns the recorded steps in file order.
func readRecord(t testing.TB) []step {
	t.Helper()
	f, err := os.Open(releasedSteps)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []step
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, st, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: line %q has no tab", releasedSteps, line)
		}
		if n := len(steps); n == 0 || steps[n-1].Name != name {
			steps = append(steps, step{Name: name})
		}
		if st != "" { // a step without statements is recorded as its name alone
			steps[len(steps)-1].Statements = append(steps[len(steps)-1].Statements, st)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// recorded returns the record's steps of stream ("migrations" or "cluster").
func recorded(t testing.TB, stream string) []step {
	t.Helper()
	var out []step
	for _, s := range readRecord(t) {
		if strings.HasPrefix(s.Name, stream+"/") {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s records no %s steps", releasedSteps, stream)
	}
	return out
}

// fold drops a statement's comments and folds its white space, the form
// in which the record holds it.
func fold(st string) string {
	var b strings.Builder
	for _, line := range strings.Split(st, "\n") {
		quoted := false
		for i, r := range line {
			if r == '\'' {
				quoted = !quoted
			}
			if !quoted && strings.HasPrefix(line[i:], "--") {
				line = line[:i]
				break
			}
		}
		b.WriteString(line)
		b.WriteByte(' ')
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// liveSteps returns the embedded steps of both streams in the record's form.
func liveSteps(t testing.TB) []step {
	t.Helper()
	single, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := store.ClusterMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var out []step
	for i, ms := range [][]store.Migration{single, cluster} {
		stream := []string{"migrations", "cluster"}[i]
		for _, m := range ms {
			s := step{Name: stream + "/" + m.Name, Retired: strings.HasPrefix(m.SQL, "-- Retired: ")}
			for _, st := range m.Statements() {
				s.Statements = append(s.Statements, fold(st))
			}
			out = append(out, s)
		}
	}
	return out
}

// TestReleasedStepsUnchanged holds every embedded migration step to what it
// ran when it was released: an earlier release's database upgrades by the
// steps after its version, so a step that changed would upgrade it to a
// schema no release had. A step may only be retired (run nothing, saying
// why): TestUpgradeFromEveryRelease shows that no upgrade needs it. New
// steps are appended with -record.
func TestReleasedStepsUnchanged(t *testing.T) {
	rec := map[string]step{}
	for _, s := range readRecord(t) {
		if _, dup := rec[s.Name]; dup {
			t.Fatalf("%s records %s twice", releasedSteps, s.Name)
		}
		rec[s.Name] = s
	}
	var added []step
	for _, s := range liveSteps(t) {
		r, ok := rec[s.Name]
		if !ok {
			added = append(added, s)
			continue
		}
		if len(s.Statements) == 0 && s.Retired {
			delete(rec, s.Name)
			continue
		}
		if fmt.Sprint(r.Statements) != fmt.Sprint(s.Statements) {
			t.Errorf("%s runs\n%s\nbut was released running\n%s", s.Name, strings.Join(s.Statements, ";\n"), strings.Join(r.Statements, ";\n"))
		}
		delete(rec, s.Name)
	}
	for name := range rec {
		t.Errorf("released step %s is no longer embedded", name)
	}
	if len(added) == 0 {
		return
	}
	if !*record {
		for _, s := range added {
			t.Errorf("step %s is not in %s: once it is final, run go test -run TestReleasedStepsUnchanged -record", s.Name, releasedSteps)
		}
		return
	}
	f, err := os.OpenFile(filepath.Clean(releasedSteps), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, s := range added {
		if len(s.Statements) == 0 {
			fmt.Fprintf(w, "%s\t\n", s.Name)
		}
		for _, st := range s.Statements {
			fmt.Fprintf(w, "%s\t%s\n", s.Name, st)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d new steps in %s", len(added), releasedSteps)
}

// version is the number a step's file name starts with.
func version(t testing.TB, name string) int {
	t.Helper()
	base := name[strings.LastIndex(name, "/")+1:]
	num, _, _ := strings.Cut(base, "_")
	v, err := strconv.Atoi(num)
	if err != nil {
		t.Fatalf("step %s: %v", name, err)
	}
	return v
}

// upTo selects the versions up to n.
func upTo(n int) func(int) bool { return func(v int) bool { return v <= n } }

// withTodaysColumns widens selected by the released steps that only add
// columns to samples (such as 0047 and 0049), so that a database of an
// earlier release takes the rows today's Batch writes; Migrate then finds
// those steps recorded.
func withTodaysColumns(t testing.TB, selected func(int) bool) func(int) bool {
	t.Helper()
	columns := map[int]bool{}
	for _, s := range recorded(t, "migrations") {
		only := len(s.Statements) > 0
		for _, st := range s.Statements {
			only = only && strings.HasPrefix(st, "ALTER TABLE samples ADD COLUMN ")
		}
		if only {
			columns[version(t, s.Name)] = true
		}
	}
	if len(columns) == 0 {
		t.Fatal("no released step only adds a samples column")
	}
	return func(v int) bool { return selected(v) || columns[v] }
}

// applyReleased makes conn's database what the releases made it with the
// steps of stream ("migrations", or "cluster" with fill naming the cluster
// and the database) whose versions are selected: the recorded steps, run
// and recorded in schema_migrations as they were.
func applyReleased(t testing.TB, conn driver.Conn, stream string, selected func(int) bool, fill *strings.Replacer) {
	t.Helper()
	ctx := context.Background()
	ddl := "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime('UTC')) ENGINE = MergeTree ORDER BY version"
	if stream == "cluster" {
		b, err := os.ReadFile("sql/cluster_schema_migrations.sql")
		if err != nil {
			t.Fatal(err)
		}
		ddl = fill.Replace(string(b))
	}
	if err := conn.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	for _, s := range recorded(t, stream) {
		v := version(t, s.Name)
		if !selected(v) {
			continue
		}
		for _, st := range s.Statements {
			if fill != nil {
				st = fill.Replace(st)
			}
			if err := conn.Exec(ctx, st); err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
		}
		name := strings.TrimPrefix(s.Name, "migrations/")
		// A batch: an INSERT with inline VALUES waits for data blocks on 18.16.
		b, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append(uint32(v), name, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
}
