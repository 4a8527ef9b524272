package storetest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
)

// ClusterName is the remote_servers entry of StartCluster's servers.
const ClusterName = "h3rum_test"

// Cluster is a ClickHouse cluster on loopback: one ZooKeeper (from Debian's
// libzookeeper-java, started without a daemon) and four servers as 2
// shards × 2 replicas, each with a project-local configuration and data
// directory.
type Cluster struct {
	// Servers in shard-major order: shard 1 replicas 1 and 2, then shard 2.
	Servers []*local.Server

	zk     *exec.Cmd
	zkDone chan struct{}
	zkDir  string
}

// ZooKeeper's jars as Debian installs them. zkServer.sh ignores ZOOCFGDIR,
// so the server is started directly.
const (
	zooKeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jJar     = "/usr/share/java/slf4j-simple.jar"
)

// StartCluster starts ZooKeeper and the four servers (~5 s) and stops them
// when the test ends: servers first, as a server with replicated tables
// waits for ZooKeeper while it stops.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	skipManaged(t, "four servers and ZooKeeper")
	for _, f := range []string{zooKeeperJar, slf4jJar} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("cluster tests need ZooKeeper from Debian (apt-get install libzookeeper-java libslf4j-java default-jre-headless; make deps does): %v", err)
		}
	}
	dir := t.TempDir()
	c := &Cluster{}
	t.Cleanup(func() { c.stop(t) })

	zkPort := freePort(t)
	if err := c.startZooKeeper(filepath.Join(dir, "zookeeper"), zkPort); err != nil {
		t.Fatal(err)
	}
	var pw [16]byte
	rand.Read(pw[:])
	password := hex.EncodeToString(pw[:])
	tcp := make([]int, 4)
	for i := range tcp {
		tcp[i] = freePort(t)
	}
	var shards strings.Builder
	for s := 0; s < 2; s++ {
		shards.WriteString("<shard><internal_replication>true</internal_replication>")
		for r := 0; r < 2; r++ {
			fmt.Fprintf(&shards, "<replica><host>127.0.0.1</host><port>%d</port><user>default</user><password>%s</password></replica>", tcp[2*s+r], password)
		}
		shards.WriteString("</shard>")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range tcp {
		d := filepath.Join(dir, fmt.Sprintf("ch%d", i+1), "clickhouse")
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, local.PasswordFile), []byte(password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A ZooKeeper session of 5 s, not 18.16's 30 s: a server killed
		// and restarted at once stays inactive, and looks active to its
		// peers, until its old session expires; with 30 s the replicas of a
		// shard ended up disagreeing in every kill test (deploy/README.md).
		extra := fmt.Sprintf(`<interserver_http_host>127.0.0.1</interserver_http_host>
    <interserver_http_port>%d</interserver_http_port>
    <zookeeper><node><host>127.0.0.1</host><port>%d</port></node><session_timeout_ms>5000</session_timeout_ms></zookeeper>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    <macros><shard>%02d</shard><replica>r%d</replica></macros>
    <remote_servers><%s>%s</%s></remote_servers>`, freePort(t), zkPort, i/2+1, i%2+1, ClusterName, shards.String(), ClusterName)
		// ON CLUSTER DDL waits up to 15 minutes for every server (as
		// deploy/README.md advises): under the whole suite's load an ALTER
		// can outlast the default on one replica, and a timed-out migration
		// goes on in the background but fails the one that ran it.
		// A part the kill left unrecorded in ZooKeeper is set aside at
		// restart; replicated_max_ratio_of_wrong_parts 1 keeps 18.16 from
		// refusing to start instead when it holds most of a small table's
		// rows.
		l := &local.Server{Dir: d, Port: tcp[i], ExtraConfig: extra,
			ExtraProfile:   "<distributed_ddl_task_timeout>900</distributed_ddl_task_timeout>",
			ExtraMergeTree: "<replicated_max_ratio_of_wrong_parts>1</replicated_max_ratio_of_wrong_parts>"}
		if err := l.Start(ctx); err != nil {
			t.Fatalf("starting cluster server %d: %v", i+1, err)
		}
		c.Servers = append(c.Servers, l)
		// A setting in the wrong section is ignored without a word.
		conn, err := store.Open(ctx, l.DSN())
		if err != nil {
			t.Fatal(err)
		}
		var ratio string
		err = conn.QueryRow(ctx, "SELECT value FROM system.merge_tree_settings WHERE name = 'replicated_max_ratio_of_wrong_parts'").Scan(&ratio)
		conn.Close()
		if err != nil || ratio != "1" {
			t.Fatalf("cluster server %d: replicated_max_ratio_of_wrong_parts %q, %v; want 1", i+1, ratio, err)
		}
	}
	return c
}

// DSN is the address of database db on server i (0–3), with cluster
// mode's insert settings.
func (c *Cluster) DSN(t testing.TB, i int, db string) string {
	t.Helper()
	dsn, err := store.ClusterDSN(c.Servers[i].DSNFor(db))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Dial connects to database db on the server of the cluster at addr
// (host:port, as system.clusters lists it), as store.DB.DialServer does:
// the Dial of a store.Cluster.
func (c *Cluster) Dial(t testing.TB, db string) func(ctx context.Context, addr string) (driver.Conn, error) {
	return func(ctx context.Context, addr string) (driver.Conn, error) {
		for i, l := range c.Servers {
			if strings.HasSuffix(addr, fmt.Sprintf(":%d", l.Port)) {
				return store.Open(ctx, c.DSN(t, i, db))
			}
		}
		return nil, fmt.Errorf("no server of the cluster at %s", addr)
	}
}

func (c *Cluster) startZooKeeper(dir string, port int) error {
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o750); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	conf := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(cfg, []byte(conf), 0o640); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command("java", "-Xmx256m", "-cp", zooKeeperJar+":"+slf4jJar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting ZooKeeper: %w", err)
	}
	c.zk, c.zkDone, c.zkDir = cmd, make(chan struct{}), dir
	go func() { cmd.Wait(); logf.Close(); close(c.zkDone) }()
	// ZooKeeper answers ruok before it has loaded; a server with
	// replicated tables that connects too early exits. Wait for srvr to
	// report a mode.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if zkMode(port) {
			return nil
		}
		select {
		case <-c.zkDone:
			b, _ := os.ReadFile(filepath.Join(dir, "zookeeper.log"))
			return fmt.Errorf("ZooKeeper exited: %s", tailLines(string(b), 10))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("ZooKeeper did not answer srvr within a minute")
}

// zkMode reports whether ZooKeeper on port answers srvr with its mode.
func zkMode(port int) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return false
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Mode:") {
			return true
		}
	}
	return false
}

// LogTails logs the last lines of every server's log and of ZooKeeper's,
// for a test that failed on the cluster: an ON CLUSTER statement that does
// not finish leaves its reason there (a replica's lost ZooKeeper session,
// a task it could not take), and the files go with the test's directory.
func (c *Cluster) LogTails(t testing.TB) {
	t.Helper()
	logs := []string{filepath.Join(c.zkDir, "zookeeper.log")}
	for _, l := range c.Servers {
		logs = append(logs, filepath.Join(l.Dir, "server.log"))
	}
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		t.Logf("the end of %s:\n%s", f, tailLines(string(b), 40))
	}
}

func (c *Cluster) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// In parallel: a server with replicated tables takes up to ~20 s to
	// stop, and each waits only for its own.
	var wg sync.WaitGroup
	for _, l := range c.Servers {
		wg.Go(func() {
			if err := l.Stop(ctx); err != nil {
				t.Logf("stopping a cluster server: %v", err)
			}
		})
	}
	wg.Wait()
	if c.zk != nil {
		c.zk.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.zkDone:
		case <-time.After(10 * time.Second):
			c.zk.Process.Kill()
			<-c.zkDone
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
