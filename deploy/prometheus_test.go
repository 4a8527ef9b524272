package deploy

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon/beacontest"
)

// alertTests are promtool's unit tests of the alert rules.
const alertTests = "prometheus/testdata/h3rum-alerts.test.yml"

// TestPromtool checks the Prometheus files with the tool Prometheus users run: promtool check config
// (which checks the rule files it names too) and promtool test rules, which fires each alert over series
// shaped as serve exports them. Every alert has a test.
func TestPromtool(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool is not installed (make deps installs Debian's prometheus)")
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus/prometheus.yml"},
		{"test", "rules", alertTests},
	} {
		if out, err := exec.Command("promtool", args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	var rules ruleFile
	if err := decodeStrict("prometheus/h3rum-alerts.yml", &rules); err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	docs, err := yamlDocs(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	if err := docs[0].Decode(&tests); err != nil {
		t.Fatal(err)
	}
	var tested []string
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			tested = append(tested, a.Alertname)
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !slices.Contains(tested, r.Alert) {
				t.Errorf("alert %s has no test in %s", r.Alert, alertTests)
			}
		}
	}
}

// promQL is a PromQL expression a deploy file uses, and where.
type promQL struct{ where, expr string }

// metricName finds the metric names in an expression whose string literals are removed. The
// collector's names are h3rum_*, client_golang's go_* and process_*; up is Prometheus's own. The
// expression itself is parsed by Prometheus (TestPrometheusScrape evaluates each one).
var (
	metricName    = regexp.MustCompile(`\b(?:h3rum|go|process)_[a-zA-Z0-9_:]+|\bup\b`)
	promQLString  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	grafanaVar    = regexp.MustCompile(`\$(?:\{[^}]*\}|[a-zA-Z_][a-zA-Z0-9_]*)`)
	grafanaLabels = regexp.MustCompile(`^\s*label_values\((?s:(.*)),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
)

// metricNames returns the metric names expr selects.
func metricNames(expr string) []string {
	names := metricName.FindAllString(promQLString.ReplaceAllString(expr, `""`), -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// ruleExprs returns the alert rules' expressions (prometheus/*.yml but prometheus.yml).
func ruleExprs(t *testing.T) []promQL {
	t.Helper()
	files, _ := filepath.Glob("prometheus/*.yml")
	var exprs []promQL
	for _, file := range files {
		if filepath.Base(file) == "prometheus.yml" {
			continue
		}
		var rf ruleFile
		if err := decodeStrict(file, &rf); err != nil {
			t.Fatal(err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				exprs = append(exprs, promQL{fmt.Sprintf("%s: alert %s", file, r.Alert), r.Expr})
			}
		}
	}
	return exprs
}

// grafanaExprs returns the Prometheus queries of the Grafana dashboards: every target's expr and every
// query variable's query (label_values(selector, label) as its selector) of the dashboards whose
// datasource variable is Prometheus. Grafana's variables are replaced by values Prometheus accepts:
// durations ($__rate_interval) by 1m, the others (label values in =~ matchers) by .*.
func grafanaExprs(t *testing.T) []promQL {
	t.Helper()
	files, _ := filepath.Glob("grafana/*.json")
	var exprs []promQL
	add := func(where, expr string) {
		if m := grafanaLabels.FindStringSubmatch(expr); m != nil {
			expr = m[1]
		}
		expr = grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
			if strings.HasPrefix(strings.Trim(v, "${}"), "__") {
				return "1m"
			}
			return ".*"
		})
		exprs = append(exprs, promQL{where, expr})
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Templating struct {
				List []struct {
					Name, Type string
					Query      any
				}
			}
			Panels []any
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !slices.ContainsFunc(d.Templating.List, func(v struct {
			Name, Type string
			Query      any
		}) bool {
			return v.Type == "datasource" && v.Query == "prometheus"
		}) {
			continue
		}
		for _, v := range d.Templating.List {
			q := v.Query
			if m, ok := q.(map[string]any); ok {
				q = m["query"]
			}
			if s, ok := q.(string); ok && v.Type == "query" {
				add(fmt.Sprintf("%s: variable %s", file, v.Name), s)
			}
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if targets, ok := v["targets"].([]any); ok {
					for _, tg := range targets {
						if m, ok := tg.(map[string]any); ok {
							if expr, ok := m["expr"].(string); ok {
								add(fmt.Sprintf("%s: panel %q", file, v["title"]), expr)
							}
						}
					}
				}
				walk(v["panels"])
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(d.Panels)
	}
	return exprs
}

// notScraped are names the alert rules or dashboards use that a scrape of a fresh collector does not
// show, each with the reason.
var notScraped = map[string]string{
	// A counter vector shows a series once a request arrived as 0-RTT early data; on bare loopback a
	// resumed handshake often completes before the request is written (collector/origin's
	// TestEarlyData makes one with a delaying relay).
	"h3rum_collector_early_data_requests_total": "0-RTT only",
}

// PrometheusEnv, set, runs TestPrometheusScrape: make prometheus-test sets it and runs the test alone,
// after the rest of make test, whose parallel packages would slow the two servers' start.
const PrometheusEnv = "H3RUM_TEST_PROMETHEUS"

// TestPrometheusScrape runs what an operator runs: the collector (built from ./collector/cmd/h3rum,
// managing its own ClickHouse) and Debian's Prometheus scraping its --metrics-addr every second with
// the alert rules loaded. After a probe over HTTP/2 and HTTP/3 and a report, every metric name the
// alert rules and the Grafana dashboards use is one Prometheus stored, and Prometheus evaluates every
// one of their expressions without an error.
func TestPrometheusScrape(t *testing.T) {
	if os.Getenv(PrometheusEnv) == "" {
		t.Skipf("%s is not set: make prometheus-test (part of make test) runs this", PrometheusEnv)
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (make deps installs Debian's prometheus)")
	}
	exprs := append(ruleExprs(t), grafanaExprs(t)...)
	want := map[string][]string{} // name → where
	for _, e := range exprs {
		for _, n := range metricNames(e.expr) {
			want[n] = append(want[n], e.where)
		}
	}
	if len(want) < 20 {
		t.Fatalf("only %d metric names in the rules and dashboards: %v", len(want), want)
	}

	// Prometheus starts first, scraping the address the collector will listen on: the two start side
	// by side.
	metricsPort := freePort(t)
	dir := t.TempDir()
	rules, err := filepath.Abs("prometheus/h3rum-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: h3rum
    static_configs: [{targets: ["127.0.0.1:%d"]}]
`, rules, metricsPort)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	web := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	api := "http://" + web + "/api/v1/"
	startProcess(t, "prometheus", prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web)

	start := time.Now()
	c := startServeBinary(t, metricsPort)
	c.exercise(t)
	t.Logf("collector built, started and exercised in %v", time.Since(start).Round(time.Millisecond))

	query := func(path string, params url.Values, v any) error {
		resp, err := http.Get(api + path + "?" + params.Encode())
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r struct {
			Status, Error string
			Data          json.RawMessage
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return fmt.Errorf("%s: %s: %v", path, resp.Status, err)
		}
		if r.Status != "success" {
			return fmt.Errorf("%s: %s", path, r.Error)
		}
		return json.Unmarshal(r.Data, v)
	}
	// The first scrape after the probe and the report holds every series they made.
	after := time.Now()
	waitUntil(t, 30*time.Second, `a scrape of the collector (up{job="h3rum"} == 1)`, func() error {
		var targets struct {
			ActiveTargets []struct {
				Health     string
				LastScrape time.Time
				LastError  string
			}
		}
		if err := query("targets", nil, &targets); err != nil {
			return err
		}
		if len(targets.ActiveTargets) != 1 {
			return fmt.Errorf("%d targets, want 1", len(targets.ActiveTargets))
		}
		if tg := targets.ActiveTargets[0]; tg.Health != "up" || !tg.LastScrape.After(after) {
			return fmt.Errorf("target %s, last scrape %v: %s", tg.Health, tg.LastScrape, tg.LastError)
		}
		return nil
	})
	t.Logf("scraped %v after the collector was ready", time.Since(after).Round(time.Millisecond))
	var stored []string
	if err := query("label/__name__/values", nil, &stored); err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if !slices.Contains(stored, n) && notScraped[n] == "" {
			t.Errorf("%s is not in Prometheus after a scrape; used by %s", n, strings.Join(want[n], "; "))
		}
	}
	for n := range notScraped {
		if want[n] == nil {
			t.Errorf("notScraped names %s, which nothing uses", n)
		}
	}
	for _, e := range exprs {
		var res any
		if err := query("query", url.Values{"query": {e.expr}}, &res); err != nil {
			t.Errorf("%s: %q: %v", e.where, e.expr, err)
		}
	}
	t.Logf("%d names used by %d expressions, all in a scrape (%d stored)", len(want), len(exprs), len(stored))
}

// startProcess starts a program whose output goes to the test log if the test fails, and stops it
// (SIGTERM, then SIGKILL after 30 s) when the test ends.
func startProcess(t *testing.T, name, path string, args ...string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not stop within 30 s of SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, out.String())
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveBinary is `h3rum serve` running as a process on loopback, managing its own ClickHouse.
type serveBinary struct {
	metricsPort    int
	h3Port, h2Port int
}

// startServeBinary builds the collector and starts `h3rum serve` on free loopback ports with a fresh
// data directory, and returns once ClickHouse is up.
func startServeBinary(t *testing.T, metricsPort int) *serveBinary {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "h3rum")
	build := exec.Command("go", "build", "-o", bin, "./collector/cmd/h3rum")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s := &serveBinary{metricsPort: metricsPort, h3Port: freePort(t), h2Port: freePort(t)}
	startProcess(t, "h3rum serve", bin, "serve", "--clickhouse", "local", "--data-dir", t.TempDir(),
		"--addr", fmt.Sprintf("127.0.0.1:%d", s.h3Port), "--h2-addr", fmt.Sprintf("127.0.0.1:%d", s.h2Port),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", s.metricsPort), "--flush-interval", "100ms", "--log-format", "text")
	waitUntil(t, 60*time.Second, "serve's /healthz with ClickHouse up", func() error {
		body, err := get(s.h2Client(), s.origin(s.h3Port)+"/healthz", "", 200, 2)
		if err == nil && !strings.Contains(body, "clickhouse: up") {
			err = fmt.Errorf("healthz: %q", body)
		}
		return err
	})
	return s
}

func (s *serveBinary) origin(port int) string { return fmt.Sprintf("https://localhost:%d", port) }

// h2Client speaks HTTP/2 to serve's development certificate.
func (s *serveBinary) h2Client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true,
	}}
}

// exercise makes the series that appear on a first event: connections, handshakes and probes over
// HTTP/2 and HTTP/3 on both origins, a report stored in ClickHouse.
func (s *serveBinary) exercise(t *testing.T) {
	t.Helper()
	h2 := s.h2Client()
	h3tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer h3tr.Close()
	h3 := &http.Client{Timeout: 10 * time.Second, Transport: h3tr}
	for _, c := range []struct {
		client *http.Client
		port   int
		proto  int
	}{{h2, s.h3Port, 2}, {h2, s.h2Port, 2}, {h3, s.h3Port, 3}} {
		if _, err := get(c.client, s.origin(c.port)+"/probe?bytes=1000", "", 200, c.proto); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("POST", s.origin(s.h3Port)+"/beacon", bytes.NewReader(beacontest.Report(beacontest.Run{ID: randomHex(t, 16), Warmup: 2})))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")
	resp, err := h3.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("POST /beacon: %s", resp.Status)
	}
	// The report's insert is what makes the insert histograms' first series.
	waitUntil(t, 20*time.Second, "the report's insert in /metrics", func() error {
		body, err := get(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metricsPort), "", 200, 1)
		if err == nil && !strings.Contains(body, "h3rum_ingest_insert_seconds_bucket") {
			err = errors.New("no h3rum_ingest_insert_seconds_bucket yet")
		}
		return err
	})
}
