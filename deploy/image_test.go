package deploy

// The image run as compose.yaml runs it (make image-test): the collector service's settings are read from
// the compose file and given to podman, so that the file and the test cannot drift apart.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// ImageEnv names the environment variable that gives the image TestImage runs; make image-test builds it
// (make image) and sets it.
const ImageEnv = "H3RUM_TEST_IMAGE"

// podmanCmd is podman with the settings it needs on these machines (image/containers.conf), unless
// CONTAINERS_CONF names others.
func podmanCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", args...)
	if os.Getenv("CONTAINERS_CONF") == "" {
		conf, _ := filepath.Abs(filepath.Join("image", "containers.conf"))
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	}
	return cmd
}

// podman runs podman and returns its output.
func podman(ctx context.Context, args ...string) (string, error) {
	cmd := podmanCmd(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// containerLog is what the container wrote, stdout and stderr.
func containerLog(id string) string {
	out, err := podmanCmd(context.Background(), "logs", id).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("podman logs: %v: %s", err, out)
	}
	return string(out)
}

// composeRun is a Compose service as podman run arguments.
type composeRun struct {
	args  []string       // podman run's options, without the image
	grace time.Duration  // stop_grace_period
	ports map[string]int // "443/udp" → the host port it is published on (loopback)
}

// composeKeysRun are the service keys composeRunArgs gives podman; composeKeysNot those it leaves out on
// purpose: the image is the one under test, the test starts what the service depends on, and restarting
// or health checks are the engine's business, not the image's.
var (
	composeKeysRun = []string{"read_only", "cap_drop", "security_opt", "sysctls", "stop_grace_period", "ports", "volumes", "environment"}
	composeKeysNot = []string{"image", "build", "restart", "depends_on", "profiles"}
)

// composeRunArgs reads service name of a Compose file and turns it into podman run options. vars are the
// variables the file interpolates (deploy/.env's), binds what to mount in place of the file's bind mounts
// and, if named, of its volumes (a host directory, or "tmpfs" and --tmpfs's options), env what the test sets over the file's
// environment; the other named volumes get prefix.
func composeRunArgs(t *testing.T, file, name string, vars, binds, env map[string]string, prefix string) composeRun {
	t.Helper()
	docs, err := yamlDocs(file)
	if err != nil {
		t.Fatal(err)
	}
	top, err := decodeMap(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	services, _ := top["services"].(map[string]any)
	svc, ok := services[name].(map[string]any)
	if !ok {
		t.Fatalf("%s: no service %s", file, name)
	}
	for k := range svc {
		if !slices.Contains(composeKeysRun, k) && !slices.Contains(composeKeysNot, k) {
			t.Fatalf("%s: service %s: TestImage does not know how to run %q", file, name, k)
		}
	}
	r := composeRun{ports: map[string]int{}}
	if svc["read_only"] == true {
		r.args = append(r.args, "--read-only")
	}
	for _, c := range list(svc["cap_drop"]) {
		r.args = append(r.args, "--cap-drop", c)
	}
	for _, o := range list(svc["security_opt"]) {
		r.args = append(r.args, "--security-opt", o)
	}
	for _, kv := range list(svc["sysctls"]) {
		r.args = append(r.args, "--sysctl", kv)
	}
	if s, _ := svc["stop_grace_period"].(string); s != "" {
		if r.grace, err = time.ParseDuration(s); err != nil {
			t.Fatalf("stop_grace_period %q: %v", s, err)
		}
		r.args = append(r.args, "--stop-timeout", strconv.Itoa(int(r.grace.Seconds())))
	}
	ports, err := composePorts(svc["ports"])
	if err != nil {
		t.Fatal(err)
	}
	// One host port per container port, for TCP and UDP alike (443 is both, as the file publishes it).
	host := map[int]int{}
	for _, p := range ports {
		if host[p.target] == 0 {
			host[p.target] = freePort(t)
		}
		r.ports[fmt.Sprintf("%d/%s", p.target, p.protocol)] = host[p.target]
		r.args = append(r.args, "-p", fmt.Sprintf("127.0.0.1:%d:%d/%s", host[p.target], p.target, p.protocol))
	}
	for _, v := range list(svc["volumes"]) {
		src, dst, _ := strings.Cut(v, ":")
		dst, mode, _ := strings.Cut(dst, ":")
		switch b, ok := binds[src]; {
		case ok && strings.HasPrefix(b, "tmpfs"):
			r.args = append(r.args, "--tmpfs", dst+strings.TrimPrefix(b, "tmpfs"))
			continue
		case ok:
			src = b
		case isPath(src):
			t.Fatalf("service %s mounts %s: TestImage has nothing to mount there", name, src)
		default:
			src = prefix + src
		}
		spec := src + ":" + dst
		if mode != "" {
			spec += ":" + mode
		}
		r.args = append(r.args, "-v", spec)
	}
	environment, _ := svc["environment"].(map[string]any)
	for _, k := range sortedKeys(environment) {
		v, set := env[k]
		if !set {
			if v, err = interpolate(fmt.Sprint(environment[k]), vars); err != nil {
				t.Fatalf("environment %s: %v", k, err)
			}
		}
		r.args = append(r.args, "-e", k+"="+v)
	}
	return r
}

func list(v any) []string {
	l, _ := v.([]any)
	var s []string
	for _, e := range l {
		s = append(s, fmt.Sprint(e))
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-?])([^}]*))?\}`)

// interpolate expands s as Compose does: ${V}, ${V:-default}, ${V:?error}.
func interpolate(s string, vars map[string]string) (string, error) {
	var err error
	out := interpolation.ReplaceAllStringFunc(s, func(m string) string {
		g := interpolation.FindStringSubmatch(m)
		if v := vars[g[1]]; v != "" {
			return v
		}
		switch g[2] {
		case "-":
			return g[3]
		case "?":
			err = fmt.Errorf("%s is required: %s", g[1], g[3])
		}
		return ""
	})
	return out, err
}

// freePort returns a port free on loopback for TCP and UDP at once.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no port free for TCP and UDP")
	return 0
}

// relay forwards connections from the containers of a podman network to to, which listens on
// loopback only (the managed ClickHouse does), and refuses every other peer. It stops with the test.
func relay(t *testing.T, network, to string) (addr string) {
	t.Helper()
	out, err := podman(context.Background(), "network", "inspect", network, "--format", "{{range .Subnets}}{{.Subnet}} {{.Gateway}}{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	subnetS, gw, _ := strings.Cut(out, " ")
	subnet, err := netip.ParsePrefix(subnetS)
	if err != nil {
		t.Fatalf("podman's network: %q: %v", out, err)
	}
	l, err := net.Listen("tcp4", ":0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err != nil || !subnet.Contains(ap.Addr().Unmap()) {
				c.Close()
				continue
			}
			wg.Go(func() {
				defer c.Close()
				d, err := net.Dial("tcp", to)
				if err != nil {
					return
				}
				defer d.Close()
				go func() { io.Copy(d, c); d.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, d)
			})
		}
	})
	return net.JoinHostPort(gw, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// collector is the image's collector service running in a container.
type collector struct {
	id                 string
	run                composeRun
	h2, h3             *http.Client // HTTP/2 and HTTP/3 clients of the published ports, trusting the test's certificates
	token              string       // H3RUM_REPORT_TOKEN
	h3Origin, h2Origin string       // as the world names them: https://host, port 443
	spki               []string     // the two certificates' SPKI hashes, for Chromium
}

// startCollector starts the image's collector service as compose.yaml runs it, with the data volume
// replaced by dataDir unless it is "" (a host directory, or "tmpfs[:options]"), reporting to the ClickHouse at dsn.
// The container is removed when the test ends, its log shown if the test failed.
func startCollector(t *testing.T, image, dataDir, dsn string) *collector {
	t.Helper()
	ctx := context.Background()
	const h3Host, h2Host = "h3.rumtest.example.com", "h2.rumtest.example.com"
	tlsDir, pool, spki := certFiles(t, map[string]string{"h3": h3Host, "h2": h2Host})
	c := &collector{
		id:       fmt.Sprintf("h3rum-test-%d-%s", os.Getpid(), randomHex(t, 4)),
		token:    randomHex(t, 32),
		h3Origin: "https://" + h3Host, h2Origin: "https://" + h2Host, spki: spki,
	}
	binds := map[string]string{"/etc/h3rum": tlsDir, "/var/lib/GeoIP": t.TempDir()}
	if dataDir != "" {
		binds["collector-data"] = dataDir
	}
	c.run = composeRunArgs(t, "compose.yaml", "collector",
		map[string]string{"CLICKHOUSE_PASSWORD": "unused", "H3RUM_REPORT_TOKEN": c.token}, binds,
		map[string]string{"H3RUM_CLICKHOUSE": dsn, "H3RUM_GEOIP_DB": "", "H3RUM_LOG_FORMAT": "text"},
		c.id+"-")
	// The published UDP port is not 443, so Alt-Svc must name it, as compose.yaml says for PUBLISH_H3.
	c.run.args = append(c.run.args, "-e", fmt.Sprintf("H3RUM_ALT_SVC_PORT=%d", c.run.ports["443/udp"]))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container log:\n%s", containerLog(c.id))
		}
		podman(ctx, "rm", "-f", "-v", "-t", "0", c.id)
		podman(ctx, "volume", "rm", "-f", c.id+"-collector-data")
	})
	if _, err := podman(ctx, append(append([]string{"run", "-d", "--name", c.id}, c.run.args...), image)...); err != nil {
		t.Fatal(err)
	}
	h3Port, h2Port := c.run.ports["443/tcp"], c.run.ports["8444/tcp"]
	if c.run.ports["443/udp"] != h3Port || h3Port == 0 || h2Port == 0 || c.run.ports["9464/tcp"] == 0 {
		t.Fatalf("compose.yaml publishes %v; want 443 TCP and UDP, 8444 and 9464", c.run.ports)
	}
	c.h2, c.h3 = originClients(t, pool, map[string]int{h3Host: h3Port, h2Host: h2Port}, h3Port)
	return c
}

// originClients returns an HTTP/2 client that reaches each host name on its loopback port and an
// HTTP/3 client that reaches every name on h3Port, both trusting pool.
func originClients(t *testing.T, pool *x509.CertPool, ports map[string]int, h3Port int) (h2, h3 *http.Client) {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", ports[host]))
	}
	h2 = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true,
	}}
	h3tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddr(ctx, fmt.Sprintf("127.0.0.1:%d", h3Port), tc, qc)
		}}
	t.Cleanup(func() { h3tr.Close() })
	return h2, &http.Client{Timeout: 10 * time.Second, Transport: h3tr}
}

// visitResult is a real browser's run as ClickHouse stored it.
type visitResult struct {
	runID     string
	protocols []string // each sample's phase, origin (want) and protocol as the browser and the server saw it, in order
}

// visit has a fresh headless Chromium load a page that embeds the script for site with the tag the
// image's own `h3rum embed` prints for the published origins (README, "Embed the script"). The page
// comes from a third origin on loopback; the origins' names resolve to loopback, where their ports are
// published. It waits (90 s at most) for the run's 13 samples (2+1 warm-ups, 5+5 parallel) and checks
// that each parallel batch used its origin's protocol, as the browser and the server both saw it.
func (c *collector) visit(t *testing.T, image string, conn driver.Conn, site string) visitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h3 := fmt.Sprintf("%s:%d", c.h3Origin, c.run.ports["443/tcp"])
	h2 := fmt.Sprintf("%s:%d", c.h2Origin, c.run.ports["8444/tcp"])
	tag, err := podman(ctx, "run", "--rm", "--network", "none", "--entrypoint", "h3rum", image,
		"embed", "--collector", h3, "--h3", h3, "--h2", h2, "--site", site, "--sample", "1")
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>page\n%s\n", site, tag)
	}))
	defer page.Close()
	h3URL, _ := url.Parse(c.h3Origin)
	h2URL, _ := url.Parse(c.h2Origin)
	// A dummy QUIC origin of the H3 host makes Chromium accept the SPKI-trusted certificate over QUIC,
	// while HTTP/3 is still found through the Alt-Svc the collector sends.
	b, err := chromium.Start(ctx, page.URL, chromium.Options{
		SPKI:              c.spki,
		ForceQUICOn:       h3URL.Hostname() + ":1",
		HostResolverRules: fmt.Sprintf("MAP %s 127.0.0.1, MAP %s 127.0.0.1", h3URL.Hostname(), h2URL.Hostname()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	type sample struct{ run, phase, want, got, srv, errCode string }
	var rows []sample
	for {
		rows = rows[:0]
		q, err := conn.Query(ctx, `SELECT toString(run_id), toString(phase), toString(want), toString(got),
			toString(srv_proto), error FROM samples WHERE site = ? ORDER BY seq`, site)
		if err == nil {
			for q.Next() {
				var r sample
				if err = q.Scan(&r.run, &r.phase, &r.want, &r.got, &r.srv, &r.errCode); err != nil {
					break
				}
				rows = append(rows, r)
			}
			err = errors.Join(err, q.Err())
			q.Close()
		}
		if err == nil && len(rows) >= 13 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the visit's 13 samples: %d so far (%v)\nchromium: %s", len(rows), err, b.Output())
		case <-b.Done():
			t.Fatalf("chromium exited before the visit's samples were stored (%d so far)\nchromium: %s", len(rows), b.Output())
		case <-time.After(250 * time.Millisecond):
		}
	}
	v := visitResult{runID: rows[0].run}
	parallel := map[string]int{}
	for i, r := range rows {
		v.protocols = append(v.protocols, fmt.Sprintf("%s/%s:%s/%s", r.phase, r.want, r.got, r.srv))
		if r.run != v.runID || r.errCode != "" {
			t.Errorf("sample %d: run %s (want %s), error %q", i, r.run, v.runID, r.errCode)
		}
		if r.phase == "parallel" {
			parallel[r.want]++
			if r.got != r.want || r.srv != r.want {
				t.Errorf("parallel sample %d meant for %s: Chromium saw %s, the collector %s", i, r.want, r.got, r.srv)
			}
		}
	}
	if len(rows) != 13 || parallel["h2"] != 5 || parallel["h3"] != 5 {
		t.Errorf("%d samples, parallel ones by origin %v; want 13 with 5 h2 and 5 h3", len(rows), parallel)
	}
	return v
}

// TestImage runs the image (ImageEnv) with podman as compose.yaml runs its collector service (read-only
// root, every capability dropped, the image's user nonroot, a named volume, the file's ports published on
// loopback) against a ClickHouse 18.16 the test starts: /probe answers over HTTP/2 and HTTP/3 from
// outside the container, a real headless Chromium's visit is stored with the protocols it used and
// reported, and SIGTERM drains within the service's stop_grace_period with nothing acknowledged lost.
func TestImage(t *testing.T) {
	image := os.Getenv(ImageEnv)
	if image == "" {
		t.Skipf("%s names no image: make image-test builds one and runs this", ImageEnv)
	}
	ctx := context.Background()
	ch := storetest.Private(t)
	const database = "h3rum_image"
	dsn := strings.Replace(ch.DSNFor(database), fmt.Sprintf("127.0.0.1:%d", ch.Port), relay(t, "podman", fmt.Sprintf("127.0.0.1:%d", ch.Port)), 1)
	c := startCollector(t, image, "", dsn)
	id, run, h2, h3, token, h3Origin, h2Origin := c.id, c.run, c.h2, c.h3, c.token, c.h3Origin, c.h2Origin
	if user, err := podman(ctx, "inspect", "--format", "{{.Config.User}}", id); err != nil || user != "nonroot:nonroot" {
		t.Errorf("the image's user: %q, %v; want nonroot:nonroot", user, err)
	}

	waitUntil(t, 60*time.Second, "the collector's /healthz with ClickHouse up", func() error {
		body, err := get(h2, h3Origin+"/healthz", "", 200, 2)
		if err == nil && !strings.Contains(body, "clickhouse: up") {
			err = fmt.Errorf("healthz: %q", body)
		}
		return err
	})
	for _, c := range []struct {
		name   string
		client *http.Client
		origin string
		proto  int
	}{{"HTTP/2, H3 origin", h2, h3Origin, 2}, {"HTTP/3, H3 origin", h3, h3Origin, 3}, {"HTTP/2, H2 origin", h2, h2Origin, 2}} {
		if _, err := get(c.client, c.origin+"/probe?bytes=1000", "", 200, c.proto); err != nil {
			t.Errorf("/probe over %s: %v", c.name, err)
		}
	}
	if body, err := get(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/metrics", run.ports["9464/tcp"]), "", 200, 1); err != nil || !strings.Contains(body, "h3rum_") {
		t.Errorf("/metrics on the published 9464: %v", err)
	}

	conn, err := store.Open(ctx, ch.DSNFor(database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runs := func() (n uint64) {
		if err := conn.QueryRow(ctx, "SELECT uniqExact(run_id) FROM samples").Scan(&n); err != nil {
			t.Fatalf("counting runs: %v", err)
		}
		return n
	}

	// A real visit: headless Chromium runs the script from the container's origins, and its run is
	// stored with the protocols each request used and counted by /api/report. Chromium is a bot and
	// its first run on a loaded machine may be cold, so the report is asked with both.
	visit := c.visit(t, image, conn, "shop")
	waitUntil(t, 20*time.Second, "the run in /api/report", func() error {
		body, err := get(h3, h3Origin+"/api/report?since=1h&by=none&source=raw&site=shop&include-bots=1&include-excluded=1", token, 200, 3)
		if err == nil && !strings.Contains(body, `"runs":1`) {
			err = fmt.Errorf("report: %.300s", body)
		}
		return err
	})
	if n := runs(); n != 1 {
		t.Errorf("%d runs in samples after one visit, want 1", n)
	}
	t.Logf("Chromium's run %s: %s", visit.runID, strings.Join(visit.protocols, " "))

	// Reports posted as the script posts them, ten paced under the per-address limit (--rate-limit,
	// 10 a second), for the drain below to have acknowledged reports in flight.
	post := func(client *http.Client) {
		t.Helper()
		req, _ := http.NewRequest("POST", h3Origin+"/beacon", bytes.NewReader(beacontest.Report(beacontest.Run{ID: randomHex(t, 16), Site: "shop", Warmup: 2})))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST /beacon: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 204 {
			t.Fatalf("POST /beacon: %s, want 204", resp.Status)
		}
	}
	for i := range 10 {
		post([]*http.Client{h2, h3}[i%2])
		time.Sleep(150 * time.Millisecond)
	}

	// SIGTERM (podman stop, as compose stop) right after reports are acknowledged: the collector drains
	// them into ClickHouse and exits 0 within the grace period.
	start := time.Now()
	if _, err := podman(ctx, "stop", "--time", strconv.Itoa(int(run.grace.Seconds())), id); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	code, err := podman(ctx, "inspect", "--format", "{{.State.ExitCode}}", id)
	if err != nil || code != "0" || took >= run.grace {
		t.Errorf("podman stop: exit code %s (%v) after %v; want 0 within the grace period, %v", code, err, took.Round(time.Millisecond), run.grace)
	}
	if n := runs(); n != 11 {
		t.Errorf("%d runs in ClickHouse after the drain, want 11", n)
	}
	t.Logf("stopped in %v; 11 runs stored", took.Round(time.Millisecond))
	// The named volume took the image directory's owner, and what serve made in it is nonroot's.
	mnt, err := podman(ctx, "volume", "inspect", "--format", "{{.Mountpoint}}", id+"-collector-data")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{mnt, filepath.Join(mnt, "serve.lock"), filepath.Join(mnt, "spool")} {
		if uid, gid, mode := owner(t, p); uid != 65532 || gid != 65532 || mode&0o022 != 0 {
			t.Errorf("%s: %d:%d %04o; want 65532:65532, writable by its owner only", p, uid, gid, mode)
		}
	}
}

// TestImageDataDirs runs the image with the data directory of each deploy target in place of compose's
// named volume: the directories the image's user or its group were given start the collector, the
// others stop it with the path, what is wrong and the fix.
func TestImageDataDirs(t *testing.T) {
	image := os.Getenv(ImageEnv)
	if image == "" {
		t.Skipf("%s names no image: make image-test builds one and runs this", ImageEnv)
	}
	// Nothing listens there: reports would wait in the spool, and the origins serve meanwhile.
	const noClickHouse = "clickhouse://h3rum:x@127.0.0.1:9/h3rum"
	fsGroup, stateMode := deployedDataDirs(t)
	for _, tc := range []struct {
		name          string
		uid, gid      int
		mode          os.FileMode
		tmpfs         string // instead of a directory: "tmpfs" and --tmpfs's options
		want, wantFix string // "" starts
	}{
		// A fresh PersistentVolumeClaim's root after the kubelet applied k8s/statefulset.yaml's fsGroup.
		{"PVC with fsGroup", 0, fsGroup, 0o775 | os.ModeSetgid, "", "", ""},
		// systemd's StateDirectory= with h3rum.service's StateDirectoryMode=, User= and Group= the service's.
		{"StateDirectory", 65532, 65532, stateMode, "", "", ""},
		// A default emptyDir: root's, 0777.
		{"emptyDir", 0, 0, 0o777, "", "its group and others may write it (mode 0777)", "give it a volume of its own"},
		// A tmpfs as Docker's --tmpfs mounts it (root's, 1777). podman 4.3's --tmpfs takes the image
		// directory's mode (0755) whatever mode= says, but not its owner: root's, unwritable.
		{"tmpfs, 1777", 0, 0, 0o777 | os.ModeSticky, "", "its group and others may write it (mode 1777)", "give it a volume of its own"},
		{"podman --tmpfs", 0, 0, 0, "tmpfs", "it is owned by uid 0, not by this user (uid 65532)", "chown 65532"},
		{"another user's", 1000, 1000, 0o755, "", "it is owned by uid 1000", "chown 65532"},
		{"group-writable, not setgid", 65532, 65532, 0o775, "", "its group may write it (mode 0775)", "chmod 2770"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.tmpfs
			if dir == "" {
				dir = filepath.Join(t.TempDir(), "data")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(dir, tc.uid, tc.gid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			c := startCollector(t, image, dir, noClickHouse)
			if tc.want == "" {
				waitUntil(t, 30*time.Second, "the collector's /healthz", func() error {
					_, err := get(c.h2, c.h3Origin+"/healthz", "", 200, 2)
					return err
				})
				if uid, _, _ := owner(t, filepath.Join(dir, "serve.lock")); uid != 65532 {
					t.Errorf("serve.lock owned by %d, want 65532", uid)
				}
				return
			}
			code, err := podman(context.Background(), "wait", c.id)
			log := containerLog(c.id)
			if err != nil || code != "1" || !strings.Contains(log, "refusing /var/lib/h3rum: ") ||
				!strings.Contains(log, tc.want) || !strings.Contains(log, tc.wantFix) {
				t.Errorf("exit %s (%v), log:\n%s\nwant exit 1 and a refusal of /var/lib/h3rum saying %q and %q", code, err, log, tc.want, tc.wantFix)
			}
		})
	}
}

// deployedDataDirs reads what k8s/statefulset.yaml and h3rum.service make of the data directory, so
// that TestImageDataDirs tries the directories the files make: the pod's fsGroup, which must be its
// runAsGroup with runAsUser the image's user, and the unit's StateDirectoryMode=.
func deployedDataDirs(t *testing.T) (fsGroup int, stateMode os.FileMode) {
	t.Helper()
	_, objs := k8sObjects(t)
	n := 0
	for _, o := range objs {
		if o.Kind != "StatefulSet" {
			continue
		}
		n++
		sc := o.Spec.Template.Spec.SecurityContext
		if sc.RunAsUser != 65532 || sc.RunAsGroup != 65532 || sc.FSGroup != sc.RunAsGroup {
			t.Fatalf("%s: runAsUser %d, runAsGroup %d, fsGroup %d; want the image's user and group, 65532, and fsGroup its group",
				o.file, sc.RunAsUser, sc.RunAsGroup, sc.FSGroup)
		}
		fsGroup = sc.FSGroup
	}
	if n != 1 {
		t.Fatalf("%d StatefulSets in k8s/, want 1", n)
	}
	unit, err := os.ReadFile("h3rum.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^StateDirectoryMode=([0-7]{3,4})$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("h3rum.service: no StateDirectoryMode=")
	}
	mode, _ := strconv.ParseUint(string(m[1]), 8, 32)
	stateMode = os.FileMode(mode & 0o777)
	for bit, fm := range map[uint64]os.FileMode{0o4000: os.ModeSetuid, 0o2000: os.ModeSetgid, 0o1000: os.ModeSticky} {
		if mode&bit != 0 {
			stateMode |= fm
		}
	}
	return fsGroup, stateMode
}

// owner returns the owner, group and permission bits of path.
func owner(t *testing.T, path string) (uid, gid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), fi.Mode().Perm()
}

// waitUntil polls f every 250 ms until it returns nil or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %v", d, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// get fetches url with the bearer token (if any) and wants status and HTTP major version proto.
func get(c *http.Client, url, token string, status, proto int) (string, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != status || resp.ProtoMajor != proto {
		return string(b), fmt.Errorf("GET %s: %s over %s, want %d over HTTP/%d: %.200s", url, resp.Status, resp.Proto, status, proto, b)
	}
	return string(b), nil
}

// certFiles writes a certificate for each name (file stem → host name) into a directory as compose.yaml
// asks for /etc/h3rum: <stem>.pem, and <stem>.key readable by the container's group 65532 (0640).
func certFiles(t *testing.T, names map[string]string) (dir string, pool *x509.CertPool, spki []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	for stem, host := range names {
		c, err := chromium.NewCert(host)
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err := c.WriteFiles(dir, stem)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(crt, filepath.Join(dir, stem+".pem")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(key, 0, 65532); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(key, 0o640); err != nil {
			t.Fatal(err)
		}
		pool.AddCert(c.Leaf)
		spki = append(spki, c.SPKI)
	}
	return dir, pool, spki
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
