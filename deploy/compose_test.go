package deploy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestImageCompose runs compose.yaml with Debian's podman-compose (1.0), as an operator runs it:
// `podman-compose up -d collector` with the image under test (ImageEnv). ClickHouse is the test
// suite's, reached through a relay on the project's network: no ClickHouse image can be pulled here,
// and podman-compose 1.0 starts a service's dependencies whatever --no-deps says, so an override file
// makes the clickhouse service a placeholder (the image under test as CLICKHOUSE_IMAGE, running
// `h3rum version`) and gives the collector the test's DSN, certificates and GeoIP directory. The collector starts on the
// project's named volume, binds 443 as nonroot (the file's sysctl), answers /probe over HTTP/2 and
// HTTP/3 on the ports the file publishes (PUBLISH_H3, PUBLISH_H2, on loopback), and reaches ClickHouse.
func TestImageCompose(t *testing.T) {
	image := os.Getenv(ImageEnv)
	if image == "" {
		t.Skipf("%s names no image: make image-test builds one and runs this", ImageEnv)
	}
	compose, err := exec.LookPath("podman-compose")
	if err != nil {
		t.Skip("podman-compose is not installed (make deps installs Debian's)")
	}
	// compose.yaml publishes /metrics on the host's 127.0.0.1:9464, as it is.
	if l, err := net.Listen("tcp", "127.0.0.1:9464"); err != nil {
		t.Fatalf("compose.yaml publishes 127.0.0.1:9464, which is taken: %v", err)
	} else {
		l.Close()
	}
	ctx := context.Background()
	project := fmt.Sprintf("h3rumtest%d%s", os.Getpid(), randomHex(t, 3))
	// The project's network, made before podman-compose (which uses it as it finds it), so that the
	// relay to ClickHouse can listen on its gateway.
	network := project + "_default"
	if _, err := podman(ctx, "network", "create", network); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { podman(ctx, "network", "rm", "-f", network) })
	ch := storetest.Private(t)
	const database = "h3rum_compose"
	dsn := strings.Replace(ch.DSNFor(database), fmt.Sprintf("127.0.0.1:%d", ch.Port), relay(t, network, fmt.Sprintf("127.0.0.1:%d", ch.Port)), 1)
	// Removed before the relay stops, which waits for the collector's connections to end.
	containers := []string{project + "_collector_1", project + "_clickhouse_1"}
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range containers {
				t.Logf("%s's log:\n%s", c, containerLog(c))
			}
		}
		// -v: the clickhouse service, made from the h3rum image, has an anonymous volume for the
		// image's VOLUME, which would outlive every run otherwise.
		podman(ctx, append([]string{"rm", "-f", "-v", "-t", "0"}, containers...)...)
		podman(ctx, "volume", "rm", "-f", project+"_collector-data", project+"_clickhouse-data")
	})
	const h3Host, h2Host = "h3.rumtest.example.com", "h2.rumtest.example.com"
	tlsDir, pool, _ := certFiles(t, map[string]string{"h3": h3Host, "h2": h2Host})
	override := filepath.Join(t.TempDir(), "compose.test.yaml")
	if err := os.WriteFile(override, fmt.Appendf(nil, `services:
  collector:
    image: %q
    volumes:
      - %q
      - %q
    environment:
      H3RUM_CLICKHOUSE: %q
      H3RUM_GEOIP_DB: ""
      H3RUM_LOG_FORMAT: text
  clickhouse:
    entrypoint: ["h3rum", "version"]
    restart: "no"
`, image, tlsDir+":/etc/h3rum:ro", t.TempDir()+":/geoip:ro", dsn), 0o600); err != nil {
		t.Fatal(err)
	}
	h3Port, h2Port := freePort(t), freePort(t)
	token := randomHex(t, 32)
	up, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(up, compose, "-p", project, "-f", "compose.yaml", "-f", override, "up", "-d", "collector")
	cmd.Env = append(os.Environ(),
		"CLICKHOUSE_IMAGE="+image, "CLICKHOUSE_PASSWORD=unused", "H3RUM_REPORT_TOKEN="+token,
		fmt.Sprintf("PUBLISH_H3=127.0.0.1:%d", h3Port), fmt.Sprintf("PUBLISH_H2=127.0.0.1:%d", h2Port))
	if os.Getenv("CONTAINERS_CONF") == "" {
		conf, _ := filepath.Abs(filepath.Join("image", "containers.conf"))
		cmd.Env = append(cmd.Env, "CONTAINERS_CONF="+conf)
	}
	out, err := cmd.CombinedOutput()
	// podman-compose 1.0 exits 0 when a podman run it ran failed.
	if state, err2 := podman(ctx, "inspect", "--format", "{{.State.Status}}", containers[0]); err != nil || err2 != nil || state != "running" {
		t.Fatalf("podman-compose up: %v; the collector: %q, %v\n%s", err, state, err2, out)
	}

	h2, h3 := originClients(t, pool, map[string]int{h3Host: h3Port, h2Host: h2Port}, h3Port)
	waitUntil(t, 60*time.Second, "the collector's /healthz with ClickHouse up", func() error {
		body, err := get(h2, "https://"+h3Host+"/healthz", "", 200, 2)
		if err == nil && !strings.Contains(body, "clickhouse: up") {
			err = fmt.Errorf("healthz: %q", body)
		}
		return err
	})
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		proto  int
	}{{"HTTP/2, H3 origin", h2, "https://" + h3Host, 2}, {"HTTP/3, H3 origin", h3, "https://" + h3Host, 3}, {"HTTP/2, H2 origin", h2, "https://" + h2Host, 2}} {
		if _, err := get(c.client, c.url+"/probe?bytes=1000", "", 200, c.proto); err != nil {
			t.Errorf("/probe over %s: %v", c.name, err)
		}
	}
	if body, err := get(h2, "https://"+h3Host+"/api/report?since=1h&by=none&source=raw", token, 200, 2); err != nil {
		t.Errorf("/api/report with the file's H3RUM_REPORT_TOKEN: %v: %.200s", err, body)
	}
	// The clickhouse service is created from CLICKHOUSE_IMAGE, but not started here: podman cannot
	// set its ulimits on these machines (any --ulimit brings podman's default RLIMIT_NPROC: "error
	// setting rlimit type 6: operation not permitted"), and podman-compose 1.0 goes on.
	if name, err := podman(ctx, "inspect", "--format", "{{.ImageName}}", containers[1]); err != nil || name != image {
		t.Errorf("the clickhouse service's image: %q, %v; want %s (CLICKHOUSE_IMAGE)", name, err, image)
	}
	// The named volume: the image directory's owner, and serve's lock in it.
	if user, err := podman(ctx, "inspect", "--format", "{{.Config.User}}", containers[0]); err != nil || user != "nonroot:nonroot" {
		t.Errorf("the collector's user: %q, %v; want nonroot:nonroot", user, err)
	}
	mnt, err := podman(ctx, "volume", "inspect", "--format", "{{.Mountpoint}}", project+"_collector-data")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{mnt, filepath.Join(mnt, "serve.lock")} {
		if uid, gid, mode := owner(t, p); uid != 65532 || gid != 65532 || mode&0o022 != 0 {
			t.Errorf("%s: %d:%d %04o; want 65532:65532, writable by its owner only", p, uid, gid, mode)
		}
	}
}
