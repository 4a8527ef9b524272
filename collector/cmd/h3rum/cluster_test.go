package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
)

// TestClusterFleet runs what a fleet looks like on one machine: a real
// 2 × 2 ClickHouse cluster with ZooKeeper, `h3rum migrate --cluster`, and
// two collectors writing into it through servers of different shards. One
// replica is stopped in the middle of the load and started again: every
// acknowledged report is stored once, on every server's view of the
// cluster. The report through the Distributed tables equals the report
// over the same rows copied to a single server.
func TestClusterFleet(t *testing.T) {
	c := storetest.StartCluster(t)
	name := storetest.ClusterName
	dsn := func(i int) string { return c.Servers[i].DSNFor("fleet") }

	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--clickhouse", dsn(0), "--cluster", name}, &out, &out); err != nil {
		c.LogTails(t)
		t.Fatalf("migrate --cluster: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "cluster/0001_samples_local.sql") {
		t.Errorf("migrate --cluster printed %q", out.String())
	}
	if err := run(context.Background(), []string{"migrate", "--cluster", name}, &out, &out); err == nil || !strings.Contains(err.Error(), "--clickhouse") {
		t.Errorf("--cluster with the managed local server: %v, want a usage error naming --clickhouse", err)
	}

	pops := []*testServe{
		startServe(t, "--clickhouse", dsn(0), "--cluster", name, "--collector-id", "pop1"),
		startServe(t, "--clickhouse", dsn(3), "--cluster", name, "--collector-id", "pop2"),
	}
	client := insecureClient()
	const total = 120
	var (
		mu    sync.Mutex
		acked []string
		sent  atomic.Int64
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	send := func(n int) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for sent.Add(1) <= int64(n) {
					id, body := syntheticReport("fleet")
					code, err := postBeacon(ctx, client, pops[w%2].h3, body)
					if err == nil && code == http.StatusNoContent {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
	}
	send(total / 2)
	// One replica of shard 1 goes down mid-load; the load goes on.
	down := c.Servers[1]
	if err := down.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	send(total)
	if err := down.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if len(acked) < total*9/10 {
		t.Fatalf("only %d of %d reports acknowledged", len(acked), total)
	}

	conns := make([]driver.Conn, len(c.Servers))
	for i := range c.Servers {
		conn, err := store.Open(ctx, dsn(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[i] = conn
	}
	// Every acknowledged run, once, seen from every server once the
	// restarted replica has caught up.
	ids := make([]string, len(acked))
	for i, id := range acked {
		ids[i] = uuidString(id)
	}
	for i, conn := range conns {
		waitFor(t, 90*time.Second, fmt.Sprintf("server %d to see every acknowledged run", i+1), func() (bool, error) {
			var runs, rows, inAcked uint64
			err := conn.QueryRow(ctx, "SELECT uniqExact(run_id), count(), countIf(has(?, toString(run_id))) FROM samples WHERE site = 'fleet'", ids).Scan(&runs, &rows, &inAcked)
			return runs == uint64(len(ids)) && rows == 13*runs && inAcked == rows, err
		})
	}
	for s := range 2 {
		waitFor(t, 90*time.Second, fmt.Sprintf("shard %d's replicas to agree", s+1), func() (bool, error) {
			var a, b uint64
			if err := conns[2*s].QueryRow(ctx, "SELECT count() FROM samples_local").Scan(&a); err != nil {
				return false, err
			}
			err := conns[2*s+1].QueryRow(ctx, "SELECT count() FROM samples_local").Scan(&b)
			return a == b && a > 0, err
		})
	}

	// The same rows on one server give the same report.
	single := storetest.DB(t)
	var db string
	if err := single.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(c.Servers[0].Dir, local.PasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(b))
	copySQL := fmt.Sprintf("INSERT INTO samples SELECT * FROM remote('127.0.0.1:%d', fleet, samples, 'default', '%s')", c.Servers[0].Port, pw)
	if err := single.Exec(ctx, copySQL); err != nil {
		t.Fatalf("copying the cluster's rows to a single server: %v", err)
	}
	now := time.Now().UTC()
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		for _, by := range []string{"none", "continent", "collector"} {
			if by == "collector" && src == model.SourceRollup {
				continue // the rollup is not keyed by collector
			}
			o := model.Options{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), By: by, Source: src, MinRuns: 1, Replicates: 200, Seed: 7}
			a, err := queries.Run(ctx, conns[2], o)
			if err != nil {
				t.Fatalf("%s by %s on the cluster: %v", src, by, err)
			}
			b, err := queries.Run(ctx, single, o)
			if err != nil {
				t.Fatalf("%s by %s on one server: %v", src, by, err)
			}
			// The quantile curves are t-digest estimates (REPORT.md), which a
			// Distributed table merges from each shard's state: close to one
			// server's, not equal. They are compared within 2 %, then the
			// rest of the report exactly.
			for i := range min(len(a.Groups), len(b.Groups)) {
				if err := curvesClose(a.Groups[i].Curves, b.Groups[i].Curves); err != nil {
					t.Errorf("%s by %s, group %s: the cluster's curves differ from one server's: %v", src, by, a.Groups[i].Group, err)
				}
				a.Groups[i].Curves, b.Groups[i].Curves = nil, nil
			}
			ja, _ := json.Marshal(a.Groups)
			jb, _ := json.Marshal(b.Groups)
			// The rollup counts runs with HyperLogLog (REPORT.md): ±5 %.
			if len(a.Groups) == 0 || (src == model.SourceRaw && a.Groups[0].Runs != len(acked)) ||
				math.Abs(float64(a.Groups[0].Runs-len(acked))) > 0.05*float64(len(acked)) {
				t.Fatalf("%s by %s: the cluster's report has %+v, want the %d acknowledged runs", src, by, a.Groups, len(acked))
			}
			if !bytes.Equal(ja, jb) {
				t.Errorf("%s by %s: the cluster's report differs from one server's over the same rows:\ncluster %s\n single %s", src, by, ja, jb)
			}
		}
	}
}

// curvesClose reports how two groups' quantile curves differ by more than
// 2 % at a level, or nil.
func curvesClose(a, b *model.Curves) error {
	if (a == nil) != (b == nil) {
		return fmt.Errorf("one is null: %v, %v", a, b)
	}
	if a == nil {
		return nil
	}
	if !slices.Equal(a.Levels, b.Levels) || len(a.H2) != len(b.H2) || len(a.H3) != len(b.H3) {
		return fmt.Errorf("shapes differ: %+v, %+v", a, b)
	}
	for _, c := range [][2][]float64{{a.H2, b.H2}, {a.H3, b.H3}} {
		for i := range c[0] {
			if d := math.Abs(c[0][i] - c[1][i]); d > 0.02*math.Max(math.Abs(c[0][i]), math.Abs(c[1][i])) {
				return fmt.Errorf("at p%g: %g ms against %g", a.Levels[i], c[0][i], c[1][i])
			}
		}
	}
	return nil
}
