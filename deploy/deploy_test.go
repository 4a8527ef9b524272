package deploy

// What `make test` checks of the deployment files (README.md, "How these files were checked"):
// every YAML file parses; the Kubernetes objects, the Compose services, the Prometheus rules and
// the Grafana dashboards are checked against each other (prometheus_test.go checks the metric names
// with a real Prometheus); the systemd unit passes `systemd-analyze verify`. Nothing here needs a container engine or a cluster.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository, seen from this package's directory (where go test runs).
const repoRoot = ".."

// ---------------------------------------------------------------------------------------------
// YAML

// yamlFiles lists every YAML file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no YAML files under deploy/")
	}
	return files
}

// yamlDocs decodes every document of a (possibly multi-document) YAML file.
func yamlDocs(path string) ([]*yaml.Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, len(docs)+1, err)
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			return nil, fmt.Errorf("%s: document %d is empty", path, len(docs)+1)
		}
		docs = append(docs, &n)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no YAML document", path)
	}
	return docs, nil
}

// decodeStrict decodes a one-document YAML file into v; a key v has no field for is an error.
func decodeStrict(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: want one YAML document, found more", path)
	}
	return nil
}

// decodeMap decodes a node into a map, merge keys (<<) resolved.
func decodeMap(n *yaml.Node) (map[string]any, error) {
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkKeys reports the keys of m that are neither in allowed nor extensions (x-…) when ext is set.
func checkKeys(m map[string]any, ext bool, allowed ...string) []string {
	var bad []string
	for k := range m {
		if !slices.Contains(allowed, k) && !(ext && strings.HasPrefix(k, "x-")) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

func TestYAMLFilesParse(t *testing.T) {
	for _, p := range yamlFiles(t) {
		if _, err := yamlDocs(p); err != nil {
			t.Error(err) // syntax, duplicate keys, tabs, empty documents
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
	Protocol      string `yaml:"protocol"`
}

type probe struct {
	HTTPGet *struct {
		Port yaml.Node `yaml:"port"`
		Path string    `yaml:"path"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port yaml.Node `yaml:"port"`
	} `yaml:"tcpSocket"`
}

type container struct {
	Name    string          `yaml:"name"`
	Image   string          `yaml:"image"`
	Ports   []containerPort `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type servicePort struct {
	Name       string    `yaml:"name"`
	Protocol   string    `yaml:"protocol"`
	Port       int       `yaml:"port"`
	TargetPort yaml.Node `yaml:"targetPort"`
}

// k8sObject is the part of every kind that the checks read; decoded leniently (the full schemas
// are Kubernetes', not here), with the top-level keys checked by kind.
type k8sObject struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		// StatefulSet, Deployment
		Replicas    *int      `yaml:"replicas"`
		ServiceName string    `yaml:"serviceName"`
		Selector    yaml.Node `yaml:"selector"` // a labelSelector, or a Service's label map
		Template    struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name string `yaml:"name"`
				} `yaml:"volumes"`
				SecurityContext struct {
					RunAsUser  int `yaml:"runAsUser"`
					RunAsGroup int `yaml:"runAsGroup"`
					FSGroup    int `yaml:"fsGroup"`
				} `yaml:"securityContext"`
			} `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata objectMeta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
		// Service
		Type                  string        `yaml:"type"`
		ExternalTrafficPolicy string        `yaml:"externalTrafficPolicy"`
		ClusterIP             string        `yaml:"clusterIP"`
		Ports                 []servicePort `yaml:"ports"`
		// PodDisruptionBudget
		MinAvailable   yaml.Node `yaml:"minAvailable"` // Kind 0 when absent
		MaxUnavailable yaml.Node `yaml:"maxUnavailable"`
		// NetworkPolicy
		PodSelector labelSelector `yaml:"podSelector"`
		Ingress     []struct {
			Ports []struct {
				Protocol string    `yaml:"protocol"`
				Port     yaml.Node `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	} `yaml:"spec"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`

	file string
}

// topLevel are the keys each kind may have besides apiVersion, kind and metadata.
var topLevel = map[string][]string{
	"Namespace":           {"spec"},
	"ConfigMap":           {"data", "binaryData", "immutable"},
	"Secret":              {"data", "stringData", "type", "immutable"},
	"Service":             {"spec"},
	"StatefulSet":         {"spec"},
	"Deployment":          {"spec"},
	"PodDisruptionBudget": {"spec"},
	"NetworkPolicy":       {"spec"},
}

// apiVersions are the stable API groups of the kinds used.
var apiVersions = map[string]string{
	"Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1",
	"StatefulSet": "apps/v1", "Deployment": "apps/v1",
	"PodDisruptionBudget": "policy/v1", "NetworkPolicy": "networking.k8s.io/v1",
}

type kustomization struct {
	APIVersion         string            `yaml:"apiVersion"`
	Kind               string            `yaml:"kind"`
	Metadata           objectMeta        `yaml:"metadata"`
	Namespace          string            `yaml:"namespace"`
	Resources          []string          `yaml:"resources"`
	Labels             []yaml.Node       `yaml:"labels"`
	CommonLabels       map[string]string `yaml:"commonLabels"`
	CommonAnnotations  map[string]string `yaml:"commonAnnotations"`
	Images             []yaml.Node       `yaml:"images"`
	Patches            []yaml.Node       `yaml:"patches"`
	Components         []string          `yaml:"components"`
	ConfigMapGenerator []yaml.Node       `yaml:"configMapGenerator"`
	SecretGenerator    []yaml.Node       `yaml:"secretGenerator"`
}

// k8sObjects reads the kustomization and every object of its resources.
func k8sObjects(t *testing.T) (kustomization, []*k8sObject) {
	t.Helper()
	var k kustomization
	if err := decodeStrict("k8s/kustomization.yaml", &k); err != nil {
		t.Fatal(err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: apiVersion %q kind %q", k.APIVersion, k.Kind)
	}
	if len(k.Resources) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	// Every manifest in k8s/ is listed, once, and every listed one exists.
	entries, err := os.ReadDir("k8s")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" && !slices.Contains(k.Resources, n) {
			t.Errorf("k8s/%s is not in kustomization.yaml's resources", n)
		}
	}
	var objs []*k8sObject
	seen := map[string]bool{}
	for _, r := range k.Resources {
		if seen[r] {
			t.Errorf("kustomization.yaml lists %s twice", r)
		}
		seen[r] = true
		path := filepath.Join("k8s", r)
		docs, err := yamlDocs(path)
		if err != nil {
			t.Errorf("kustomization.yaml resource %s: %v", r, err)
			continue
		}
		for i, d := range docs {
			where := fmt.Sprintf("%s (document %d)", path, i+1)
			m, err := decodeMap(d)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			var o k8sObject
			if err := d.Decode(&o); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			o.file = where
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: want apiVersion, kind and metadata.name, have %q %q %q", where, o.APIVersion, o.Kind, o.Metadata.Name)
				continue
			}
			allowed, ok := topLevel[o.Kind]
			if !ok {
				t.Errorf("%s: kind %s is new to this test: add its top-level keys to topLevel", where, o.Kind)
				continue
			}
			if bad := checkKeys(m, false, append([]string{"apiVersion", "kind", "metadata"}, allowed...)...); len(bad) > 0 {
				t.Errorf("%s: %s %s: unknown top-level keys %q", where, o.Kind, o.Metadata.Name, bad)
			}
			if meta, _ := m["metadata"].(map[string]any); meta != nil {
				if bad := checkKeys(meta, false, "name", "namespace", "labels", "annotations"); len(bad) > 0 {
					t.Errorf("%s: unknown metadata keys %q", where, bad)
				}
			}
			if want := apiVersions[o.Kind]; o.APIVersion != want {
				t.Errorf("%s: %s has apiVersion %q, want %q", where, o.Kind, o.APIVersion, want)
			}
			if o.Kind == "Namespace" {
				if o.Metadata.Name != k.Namespace {
					t.Errorf("%s: Namespace %q, kustomization's namespace is %q", where, o.Metadata.Name, k.Namespace)
				}
			} else if o.Metadata.Namespace != k.Namespace {
				t.Errorf("%s: %s %s in namespace %q, want %q", where, o.Kind, o.Metadata.Name, o.Metadata.Namespace, k.Namespace)
			}
			objs = append(objs, &o)
		}
	}
	return k, objs
}

func (o *k8sObject) matchLabels() map[string]string {
	var s labelSelector
	if err := o.Spec.Selector.Decode(&s); err != nil {
		return nil
	}
	return s.MatchLabels
}

func (o *k8sObject) serviceSelector() map[string]string {
	var s map[string]string
	if err := o.Spec.Selector.Decode(&s); err != nil {
		return nil
	}
	return s
}

// selects reports whether the selector sel (non-empty) matches labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func protocol(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

// containerPortFor resolves a port reference (a number or a port name) against a container.
func containerPortFor(c container, ref *yaml.Node, proto string) (containerPort, bool) {
	for _, p := range c.Ports {
		if protocol(p.Protocol) != proto {
			continue
		}
		if (ref.Tag == "!!int" && ref.Value == strconv.Itoa(p.ContainerPort)) || (ref.Tag == "!!str" && ref.Value == p.Name) {
			return p, true
		}
	}
	return containerPort{}, false
}

// addrPort is the port of a host:port flag value such as ":443".
func addrPort(t *testing.T, what, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q: %v", what, addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s %q: %v", what, addr, err)
	}
	return n
}

func TestKubernetes(t *testing.T) {
	_, objs := k8sObjects(t)
	byKind := map[string][]*k8sObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	find := func(kind, name string) *k8sObject {
		for _, o := range byKind[kind] {
			if o.Metadata.Name == name {
				return o
			}
		}
		return nil
	}
	var cm *k8sObject
	if cms := byKind["ConfigMap"]; len(cms) == 1 {
		cm = cms[0]
	} else {
		t.Fatalf("want one ConfigMap (the collector's settings), have %d", len(cms))
	}
	h3Port := addrPort(t, "configmap.yaml H3RUM_ADDR", cm.Data["H3RUM_ADDR"])
	h2Port := addrPort(t, "configmap.yaml H3RUM_H2_ADDR", cm.Data["H3RUM_H2_ADDR"])
	metricsPort := addrPort(t, "configmap.yaml H3RUM_METRICS_ADDR", cm.Data["H3RUM_METRICS_ADDR"])

	workloads := append(slices.Clone(byKind["StatefulSet"]), byKind["Deployment"]...)
	if len(workloads) == 0 {
		t.Fatal("no StatefulSet or Deployment")
	}
	for _, w := range workloads {
		where := fmt.Sprintf("%s: %s %s", w.file, w.Kind, w.Metadata.Name)
		sel, podLabels := w.matchLabels(), w.Spec.Template.Metadata.Labels
		if !selects(sel, podLabels) {
			t.Errorf("%s: selector %v does not match the pod template's labels %v", where, sel, podLabels)
		}
		if w.Kind == "StatefulSet" {
			svc := find("Service", w.Spec.ServiceName)
			if svc == nil || svc.Spec.ClusterIP != "None" {
				t.Errorf("%s: serviceName %q is not a headless Service of these manifests", where, w.Spec.ServiceName)
			}
		}
		volumes := map[string]bool{}
		for _, v := range w.Spec.Template.Spec.Volumes {
			volumes[v.Name] = true
		}
		claims := map[string]bool{}
		for _, v := range w.Spec.VolumeClaimTemplates {
			claims[v.Metadata.Name] = true
		}
		if len(w.Spec.Template.Spec.Containers) == 0 {
			t.Errorf("%s: no containers", where)
		}
		for _, c := range w.Spec.Template.Spec.Containers {
			where := where + " container " + c.Name
			for name, p := range map[string]*probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
				switch {
				case p == nil:
					t.Errorf("%s: no %s", where, name)
				case p.HTTPGet != nil:
					if _, ok := containerPortFor(c, &p.HTTPGet.Port, "TCP"); !ok {
						t.Errorf("%s: %s port %q is not a TCP container port", where, name, p.HTTPGet.Port.Value)
					}
				case p.TCPSocket != nil:
					if _, ok := containerPortFor(c, &p.TCPSocket.Port, "TCP"); !ok {
						t.Errorf("%s: %s port %q is not a TCP container port", where, name, p.TCPSocket.Port.Value)
					}
				default:
					t.Errorf("%s: %s is neither httpGet nor tcpSocket", where, name)
				}
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
				t.Errorf("%s: want resources.requests cpu and memory and limits.memory, have %+v", where, c.Resources)
			}
			for _, ef := range c.EnvFrom {
				if r := ef.ConfigMapRef; r != nil && find("ConfigMap", r.Name) == nil {
					t.Errorf("%s: envFrom ConfigMap %q is not defined", where, r.Name)
				}
				if r := ef.SecretRef; r != nil && find("Secret", r.Name) == nil {
					t.Errorf("%s: envFrom Secret %q is not defined (if you create it with kubectl, keep a placeholder or drop this check)", where, r.Name)
				}
			}
			dataOnClaim := false
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] && !claims[m.Name] {
					t.Errorf("%s: volumeMount %q names no volume or volume claim template", where, m.Name)
				}
				if m.MountPath == cm.Data["H3RUM_DATA_DIR"] && claims[m.Name] {
					dataOnClaim = true
				}
			}
			if w.Kind == "StatefulSet" && !dataOnClaim {
				t.Errorf("%s: H3RUM_DATA_DIR %q (the spool) is not mounted from a volume claim template", where, cm.Data["H3RUM_DATA_DIR"])
			}
			for _, want := range []containerPort{{"", h3Port, "TCP"}, {"", h3Port, "UDP"}, {"", h2Port, "TCP"}, {"", metricsPort, "TCP"}} {
				if !slices.ContainsFunc(c.Ports, func(p containerPort) bool {
					return p.ContainerPort == want.ContainerPort && protocol(p.Protocol) == want.Protocol
				}) {
					t.Errorf("%s: no container port %d/%s (configmap.yaml's addresses)", where, want.ContainerPort, want.Protocol)
				}
			}
		}
	}

	// podsOf returns the containers of the workloads whose pods sel selects.
	podsOf := func(sel map[string]string) []container {
		var cs []container
		for _, w := range workloads {
			if selects(sel, w.Spec.Template.Metadata.Labels) {
				cs = append(cs, w.Spec.Template.Spec.Containers...)
			}
		}
		return cs
	}
	// reaches reports which container port a Service port leads to.
	reaches := func(cs []container, sp servicePort) (containerPort, bool) {
		for _, c := range cs {
			if p, ok := containerPortFor(c, &sp.TargetPort, protocol(sp.Protocol)); ok {
				return p, true
			}
		}
		return containerPort{}, false
	}

	h3Mixed, h2Published, metricsServed := false, false, false
	for _, s := range byKind["Service"] {
		where := fmt.Sprintf("%s: Service %s", s.file, s.Metadata.Name)
		cs := podsOf(s.serviceSelector())
		if len(cs) == 0 {
			t.Errorf("%s: selector %v selects no pod of these manifests", where, s.serviceSelector())
			continue
		}
		if s.Spec.Type == "LoadBalancer" && s.Spec.ExternalTrafficPolicy != "Local" {
			t.Errorf("%s: a LoadBalancer without externalTrafficPolicy: Local replaces client addresses with nodes'", where)
		}
		reached := map[string]int{} // protocol/service port -> container port
		for _, sp := range s.Spec.Ports {
			p, ok := reaches(cs, sp)
			if !ok {
				t.Errorf("%s: port %s (%d/%s) targets %q, not a container port of that protocol", where, sp.Name, sp.Port, protocol(sp.Protocol), sp.TargetPort.Value)
				continue
			}
			reached[fmt.Sprintf("%s/%d", protocol(sp.Protocol), sp.Port)] = p.ContainerPort
			if p.ContainerPort == h2Port && s.Spec.Type == "LoadBalancer" {
				h2Published = true
			}
			if p.ContainerPort == metricsPort {
				metricsServed = true
			}
		}
		for _, sp := range s.Spec.Ports {
			if protocol(sp.Protocol) == "UDP" && reached[fmt.Sprintf("UDP/%d", sp.Port)] == h3Port {
				if reached[fmt.Sprintf("TCP/%d", sp.Port)] != h3Port {
					t.Errorf("%s: UDP %d reaches the H3 origin but TCP %d does not: HTTP/3 is advertised over TCP on the same port", where, sp.Port, sp.Port)
				} else if s.Spec.Type == "LoadBalancer" {
					h3Mixed = true
				}
			}
		}
	}
	if !h3Mixed {
		t.Errorf("no LoadBalancer Service carries TCP and UDP on one port to the H3 origin's port %d", h3Port)
	}
	if !h2Published {
		t.Errorf("no LoadBalancer Service reaches the H2 origin's port %d", h2Port)
	}
	if !metricsServed {
		t.Errorf("no Service reaches /metrics on port %d", metricsPort)
	}

	pdbs := byKind["PodDisruptionBudget"]
	if len(pdbs) == 0 {
		t.Error("no PodDisruptionBudget")
	}
	for _, b := range pdbs {
		where := fmt.Sprintf("%s: PodDisruptionBudget %s", b.file, b.Metadata.Name)
		if (b.Spec.MinAvailable.Kind == 0) == (b.Spec.MaxUnavailable.Kind == 0) {
			t.Errorf("%s: want exactly one of minAvailable and maxUnavailable", where)
		}
		n := 0
		for _, w := range workloads {
			if !selects(b.matchLabels(), w.Spec.Template.Metadata.Labels) {
				continue
			}
			n++
			replicas := 1
			if w.Spec.Replicas != nil {
				replicas = *w.Spec.Replicas
			}
			// minAvailable equal to the replicas would block every node drain for good.
			if m := b.Spec.MinAvailable; m.Tag == "!!int" {
				if v, _ := strconv.Atoi(m.Value); v >= replicas {
					t.Errorf("%s: minAvailable %d with %s %s's %d replicas blocks every eviction", where, v, w.Kind, w.Metadata.Name, replicas)
				}
			}
			if m := b.Spec.MaxUnavailable; m.Kind != 0 && m.Value == "0" {
				t.Errorf("%s: maxUnavailable 0 blocks every eviction", where)
			}
		}
		if n == 0 {
			t.Errorf("%s: selector %v selects no workload's pods", where, b.matchLabels())
		}
	}

	for _, np := range byKind["NetworkPolicy"] {
		where := fmt.Sprintf("%s: NetworkPolicy %s", np.file, np.Metadata.Name)
		cs := podsOf(np.Spec.PodSelector.MatchLabels)
		if len(cs) == 0 {
			t.Errorf("%s: podSelector selects no pod of these manifests", where)
			continue
		}
		for _, in := range np.Spec.Ingress {
			for _, p := range in.Ports {
				if _, ok := reaches(cs, servicePort{Protocol: p.Protocol, TargetPort: p.Port}); !ok {
					t.Errorf("%s: ingress port %s/%s is not a container port", where, p.Port.Value, protocol(p.Protocol))
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Compose

var composeServiceKeys = []string{
	"image", "build", "restart", "read_only", "cap_drop", "cap_add", "security_opt", "sysctls",
	"stop_grace_period", "stop_signal", "ports", "volumes", "environment", "env_file", "depends_on",
	"healthcheck", "ulimits", "profiles", "command", "entrypoint", "user", "networks", "network_mode",
	"labels", "logging", "tmpfs", "deploy", "container_name", "init", "extra_hosts",
}

// publishedPort is a container port a Compose service publishes.
type publishedPort struct {
	hostIP   string
	target   int
	protocol string
}

// composePorts parses a service's ports, short ("[ip:]host:container[/proto]") or long syntax.
func composePorts(v any) ([]publishedPort, error) {
	list, _ := v.([]any)
	var ps []publishedPort
	for _, e := range list {
		switch e := e.(type) {
		case string:
			spec, proto, _ := strings.Cut(e, "/")
			if proto == "" {
				proto = "tcp"
			}
			parts := strings.Split(spec, ":")
			target, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil {
				return nil, fmt.Errorf("port %q: container port: %v", e, err)
			}
			ip := ""
			if len(parts) == 3 {
				ip = parts[0]
			}
			ps = append(ps, publishedPort{ip, target, proto})
		case map[string]any:
			target, _ := e["target"].(int)
			proto, _ := e["protocol"].(string)
			if proto == "" {
				proto = "tcp"
			}
			ip, _ := e["host_ip"].(string)
			ps = append(ps, publishedPort{ip, target, proto})
		default:
			return nil, fmt.Errorf("port %v: neither short nor long syntax", e)
		}
	}
	return ps, nil
}

// isPath reports whether a Compose volume source is a host path (or a variable), not a named volume.
func isPath(src string) bool { return src == "" || strings.ContainsAny(src[:1], "/.~$") }

func TestCompose(t *testing.T) {
	for _, file := range []string{"compose.yaml", "compose.probe.yaml"} {
		t.Run(file, func(t *testing.T) {
			docs, err := yamlDocs(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 {
				t.Fatalf("want one document, have %d", len(docs))
			}
			top, err := decodeMap(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			if bad := checkKeys(top, true, "name", "services", "volumes", "networks", "configs", "secrets"); len(bad) > 0 {
				t.Errorf("unknown top-level keys %q", bad)
			}
			services, _ := top["services"].(map[string]any)
			if len(services) == 0 {
				t.Fatal("no services")
			}
			volumes, _ := top["volumes"].(map[string]any)
			used := map[string]bool{}
			for name, v := range services {
				svc, _ := v.(map[string]any)
				where := "service " + name
				if bad := checkKeys(svc, false, composeServiceKeys...); len(bad) > 0 {
					t.Errorf("%s: unknown keys %q", where, bad)
				}
				if svc["image"] == nil && svc["build"] == nil {
					t.Errorf("%s: neither image nor build", where)
				}
				env, _ := svc["environment"].(map[string]any)
				envStr := func(k string) string { s, _ := env[k].(string); return s }
				image, _ := svc["image"].(string)
				isH3rum := strings.HasPrefix(image, "h3rum:") || envStr("H3RUM_ROLE") != ""

				// Volumes: named ones are declared at the top.
				mounts := map[string]string{} // container path -> source
				vols, _ := svc["volumes"].([]any)
				for _, m := range vols {
					s, ok := m.(string)
					if !ok {
						t.Errorf("%s: volume %v: use the short syntax", where, m)
						continue
					}
					parts := strings.Split(s, ":")
					if len(parts) < 2 {
						t.Errorf("%s: volume %q has no container path", where, s)
						continue
					}
					src := parts[0]
					mounts[parts[1]] = src
					if !isPath(src) {
						if _, ok := volumes[src]; !ok {
							t.Errorf("%s: volume %q is not declared under volumes:", where, src)
						}
						used[src] = true
					}
				}

				// Dependencies exist, and a wait for health has a health check to wait for.
				if deps, ok := svc["depends_on"].(map[string]any); ok {
					for dep, c := range deps {
						d, ok := services[dep].(map[string]any)
						if !ok {
							t.Errorf("%s: depends on undefined service %q", where, dep)
							continue
						}
						cond, _ := c.(map[string]any)
						if cond["condition"] == "service_healthy" && d["healthcheck"] == nil {
							t.Errorf("%s: waits for %s to be healthy, which has no healthcheck", where, dep)
						}
					}
				}
				// Health checks: every service has one, except h3rum's: its image has no shell or
				// client to run one with (README.md §5); a CMD-SHELL one could never pass.
				hc, _ := svc["healthcheck"].(map[string]any)
				switch {
				case isH3rum && hc != nil:
					t.Errorf("%s: a healthcheck cannot run in the distroless h3rum image", where)
				case !isH3rum && hc == nil:
					t.Errorf("%s: no healthcheck", where)
				case !isH3rum:
					test, _ := hc["test"].([]any)
					if len(test) < 2 || (test[0] != "CMD" && test[0] != "CMD-SHELL") {
						t.Errorf("%s: healthcheck test %v: want [CMD …] or [CMD-SHELL …]", where, hc["test"])
					}
					for _, k := range []string{"interval", "timeout", "retries"} {
						if hc[k] == nil {
							t.Errorf("%s: healthcheck without %s", where, k)
						}
					}
				}
				if !isH3rum {
					continue
				}

				// The collector: ports from its own addresses.
				role := envStr("H3RUM_ROLE")
				if !slices.Contains([]string{"all", "probe", "ingest"}, role) {
					t.Errorf("%s: H3RUM_ROLE %q", where, role)
				}
				ports, err := composePorts(svc["ports"])
				if err != nil {
					t.Errorf("%s: %v", where, err)
				}
				publishes := func(port int, proto string) (publishedPort, bool) {
					i := slices.IndexFunc(ports, func(p publishedPort) bool { return p.target == port && p.protocol == proto })
					if i < 0 {
						return publishedPort{}, false
					}
					return ports[i], true
				}
				h3 := addrPort(t, where+" H3RUM_ADDR", envStr("H3RUM_ADDR"))
				for _, proto := range []string{"tcp", "udp"} {
					if _, ok := publishes(h3, proto); !ok {
						t.Errorf("%s: does not publish the H3 origin's port %d/%s", where, h3, proto)
					}
				}
				if role != "ingest" {
					h2 := addrPort(t, where+" H3RUM_H2_ADDR", envStr("H3RUM_H2_ADDR"))
					if _, ok := publishes(h2, "tcp"); !ok {
						t.Errorf("%s: does not publish the H2 origin's port %d/tcp", where, h2)
					}
				}
				if ma := envStr("H3RUM_METRICS_ADDR"); ma != "" {
					if p, ok := publishes(addrPort(t, where+" H3RUM_METRICS_ADDR", ma), "tcp"); ok && p.hostIP != "127.0.0.1" {
						t.Errorf("%s: /metrics (no authentication) published on %q, not 127.0.0.1", where, p.hostIP)
					}
				}
				if dir := envStr("H3RUM_DATA_DIR"); dir == "" || mounts[dir] == "" || isPath(mounts[dir]) {
					t.Errorf("%s: H3RUM_DATA_DIR %q (the spool) is not on a named volume", where, dir)
				}
			}
			for v := range volumes {
				if !used[v] {
					t.Errorf("volume %q is declared but no service mounts it", v)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// H3RUM_* variables name real flags

var (
	// flagMethod matches flag.FlagSet's methods that define a flag.
	flagMethod = regexp.MustCompile(`^((String|Int|Int64|Uint|Uint64|Bool|Duration|Float64|Text)(Var)?|Var|Func|BoolFunc)$`)
	flagName   = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// serveFlags returns the flag names the binary defines (fs.StringVar(&v, "name", …) and the
// like): in collector/cmd/h3rum and in collector/internal/cli, which holds the flags every
// command shares.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{
		filepath.Join(repoRoot, "collector", "cmd", "h3rum"),
		filepath.Join(repoRoot, "collector", "internal", "cli"),
	} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !flagMethod.MatchString(sel.Sel.Name) {
					return true
				}
				for _, a := range call.Args[:min(2, len(call.Args))] {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil && flagName.MatchString(s) {
							flags[s] = true
						}
						break
					}
				}
				return true
			})
		}
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags: has the way flags are defined changed?", len(flags))
	}
	return flags
}

func TestEnvironmentVariablesAreFlags(t *testing.T) {
	flags := serveFlags(t)
	re := regexp.MustCompile(`H3RUM_[A-Z0-9_]*[A-Z0-9]`)
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, v := range re.FindAllString(line, -1) {
				flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(v, "H3RUM_"), "_", "-"))
				if !flags[flag] {
					t.Errorf("%s:%d: %s is no flag's variable (no --%s in collector/cmd/h3rum or collector/internal/cli)", p, i+1, v, flag)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------------------------
// Prometheus

type staticConfig struct {
	Targets []string          `yaml:"targets"`
	Labels  map[string]string `yaml:"labels"`
}

type prometheusConfig struct {
	Global struct {
		ScrapeInterval     string            `yaml:"scrape_interval"`
		ScrapeTimeout      string            `yaml:"scrape_timeout"`
		EvaluationInterval string            `yaml:"evaluation_interval"`
		ExternalLabels     map[string]string `yaml:"external_labels"`
	} `yaml:"global"`
	RuleFiles []string `yaml:"rule_files"`
	Alerting  struct {
		Alertmanagers []struct {
			StaticConfigs []staticConfig `yaml:"static_configs"`
		} `yaml:"alertmanagers"`
	} `yaml:"alerting"`
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
}

type scrapeConfig struct {
	JobName             string           `yaml:"job_name"`
	MetricsPath         string           `yaml:"metrics_path"`
	Scheme              string           `yaml:"scheme"`
	ScrapeInterval      string           `yaml:"scrape_interval"`
	ScrapeTimeout       string           `yaml:"scrape_timeout"`
	StaticConfigs       []staticConfig   `yaml:"static_configs"`
	KubernetesSDConfigs []map[string]any `yaml:"kubernetes_sd_configs"`
	RelabelConfigs      []map[string]any `yaml:"relabel_configs"`
}

type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert         string            `yaml:"alert"`
			Record        string            `yaml:"record"`
			Expr          string            `yaml:"expr"`
			For           string            `yaml:"for"`
			KeepFiringFor string            `yaml:"keep_firing_for"`
			Labels        map[string]string `yaml:"labels"`
			Annotations   map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

func TestPrometheusConfig(t *testing.T) {
	var c prometheusConfig
	if err := decodeStrict("prometheus/prometheus.yml", &c); err != nil {
		t.Fatal(err)
	}
	for what, d := range map[string]string{"scrape_interval": c.Global.ScrapeInterval, "evaluation_interval": c.Global.EvaluationInterval} {
		if d != "" && !promDuration.MatchString(d) {
			t.Errorf("global %s %q is not a Prometheus duration", what, d)
		}
	}
	rules, _ := filepath.Glob("prometheus/*.yml")
	for _, r := range rules {
		if filepath.Base(r) != "prometheus.yml" && !slices.Contains(c.RuleFiles, filepath.Base(r)) {
			t.Errorf("%s is not in prometheus.yml's rule_files", r)
		}
	}
	for _, r := range c.RuleFiles {
		if _, err := os.Stat(filepath.Join("prometheus", r)); err != nil {
			t.Errorf("rule_files: %v", err)
		}
	}
	i := slices.IndexFunc(c.ScrapeConfigs, func(s scrapeConfig) bool { return s.JobName == "h3rum" })
	if i < 0 {
		t.Fatal(`no scrape job "h3rum" (the alert rules' up{job="h3rum"})`)
	}
	job := c.ScrapeConfigs[i]
	if job.MetricsPath != "" && job.MetricsPath != "/metrics" {
		t.Errorf("job h3rum: metrics_path %q, serve serves /metrics", job.MetricsPath)
	}
	if job.Scheme != "" && job.Scheme != "http" {
		t.Errorf("job h3rum: scheme %q, --metrics-addr is plain HTTP", job.Scheme)
	}
	n := 0
	for _, sc := range job.StaticConfigs {
		for _, target := range sc.Targets {
			if _, _, err := net.SplitHostPort(target); err != nil {
				t.Errorf("job h3rum: target %q: %v", target, err)
			}
			n++
		}
	}
	if n == 0 && len(job.KubernetesSDConfigs) == 0 {
		t.Error("job h3rum has no targets")
	}
}

func TestPrometheusRules(t *testing.T) {
	files, _ := filepath.Glob("prometheus/*.yml")
	used := map[string]bool{}
	alerts := map[string]bool{}
	for _, file := range files {
		if filepath.Base(file) == "prometheus.yml" {
			continue
		}
		var rf ruleFile
		if err := decodeStrict(file, &rf); err != nil {
			t.Error(err)
			continue
		}
		if len(rf.Groups) == 0 {
			t.Errorf("%s: no groups", file)
		}
		groups := map[string]bool{}
		for _, g := range rf.Groups {
			if g.Name == "" || groups[g.Name] {
				t.Errorf("%s: group name %q empty or repeated", file, g.Name)
			}
			groups[g.Name] = true
			if len(g.Rules) == 0 {
				t.Errorf("%s: group %s has no rules", file, g.Name)
			}
			for _, r := range g.Rules {
				where := fmt.Sprintf("%s: group %s: alert %s", file, g.Name, r.Alert)
				if r.Alert == "" || r.Record != "" {
					t.Errorf("%s: want alerting rules (alert:), have alert %q record %q", where, r.Alert, r.Record)
					continue
				}
				if alerts[r.Alert] {
					t.Errorf("%s: alert name repeated", where)
				}
				alerts[r.Alert] = true
				if !promDuration.MatchString(r.For) {
					t.Errorf("%s: for %q: want a duration (every alert waits before it fires)", where, r.For)
				}
				if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
					t.Errorf("%s: severity label %q: want critical, warning or info", where, s)
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("%s: want summary and description annotations", where)
				}
				// The description says what to do: a flag or a section of the documentation.
				if d := r.Annotations["description"]; !strings.Contains(d, "--") && !strings.Contains(d, "README") {
					t.Errorf("%s: description names neither a flag (--…) nor a README section", where)
				}
				if strings.TrimSpace(r.Expr) == "" {
					t.Errorf("%s: empty expr", where)
					continue
				}
				for _, n := range metricNames(r.Expr) {
					used[n] = true
				}
			}
		}
	}
	// What issue 13 asks the rules to cover: ingest rejecting, the spool growing, ClickHouse down.
	for _, m := range []string{
		"h3rum_ingest_rejected_total", "h3rum_ingest_nel_rejected_total",
		"h3rum_ingest_spool_bytes", "h3rum_ingest_busy_total",
		"h3rum_store_ready", "h3rum_local_clickhouse_up", "h3rum_ingest_insert_errors_total",
		"h3rum_collector_connections_refused_total",
	} {
		if !used[m] {
			t.Errorf("no alert rule uses %s", m)
		}
	}
	// Informational: a replayed insert that finds its rows already stored is exactly-once at work.
	for _, m := range []string{"h3rum_ingest_replay_skipped_runs_total", "h3rum_ingest_nel_replay_skipped_batches_total"} {
		if used[m] {
			t.Errorf("an alert rule uses %s, which is informational", m)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Grafana

// gridPos is a panel's place on Grafana's 24-column grid.
type gridPos struct{ X, Y, W, H float64 }

func (a gridPos) overlaps(b gridPos) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

// dsType resolves a datasource reference's plugin type: {"type": …}, or a ${variable} naming
// a datasource template variable or an __inputs entry. "" when it cannot tell.
func dsType(ds any, vars map[string]string) string {
	m, ok := ds.(map[string]any)
	if !ok {
		return ""
	}
	if ty, _ := m["type"].(string); ty != "" && !strings.HasPrefix(ty, "$") {
		return ty
	}
	uid, _ := m["uid"].(string)
	return vars[strings.Trim(uid, "${}")]
}

func TestGrafanaDashboards(t *testing.T) {
	files, _ := filepath.Glob("grafana/*.json")
	if len(files) == 0 {
		t.Fatal("no dashboards in grafana/")
	}
	uids := map[string]string{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var d map[string]any
			if err := dec.Decode(&d); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if dec.More() {
				t.Fatalf("%s: data after the dashboard", file)
			}
			if title, _ := d["title"].(string); title == "" {
				t.Error("no title")
			}
			if uid, _ := d["uid"].(string); uid != "" {
				if other, ok := uids[uid]; ok {
					t.Errorf("uid %q is %s's too", uid, other)
				}
				uids[uid] = file
			}

			// Variables a datasource may name: datasource variables and __inputs.
			vars := map[string]string{}
			inputs, _ := d["__inputs"].([]any)
			for _, in := range inputs {
				m, _ := in.(map[string]any)
				name, _ := m["name"].(string)
				vars[name], _ = m["pluginId"].(string)
			}
			templating, _ := d["templating"].(map[string]any)
			list, _ := templating["list"].([]any)
			for _, v := range list {
				m, _ := v.(map[string]any)
				name, _ := m["name"].(string)
				if m["type"] == "datasource" {
					vars[name], _ = m["query"].(string)
				} else {
					vars[name] = ""
				}
			}

			panels, ok := d["panels"].([]any)
			if !ok || len(panels) == 0 {
				t.Fatal("no panels")
			}
			ids := map[string]bool{}
			var checkPanels func(panels []any, parentDS any)
			checkPanels = func(panels []any, parentDS any) {
				var placed []gridPos
				for _, p := range panels {
					pm, ok := p.(map[string]any)
					if !ok {
						t.Errorf("panel %v is not an object", p)
						continue
					}
					title, _ := pm["title"].(string)
					id, _ := pm["id"].(json.Number)
					where := fmt.Sprintf("panel %s %q", id, title)
					if n, err := id.Int64(); err != nil || n <= 0 {
						t.Errorf("%s: id %v: want a positive integer", where, pm["id"])
					} else if ids[id.String()] {
						t.Errorf("%s: id repeated", where)
					}
					ids[id.String()] = true
					if strings.TrimSpace(title) == "" {
						t.Errorf("%s: no title", where)
					}
					gp, _ := pm["gridPos"].(map[string]any)
					var g gridPos
					for k, dst := range map[string]*float64{"x": &g.X, "y": &g.Y, "w": &g.W, "h": &g.H} {
						n, ok := gp[k].(json.Number)
						if !ok {
							t.Errorf("%s: gridPos.%s missing", where, k)
							continue
						}
						*dst, _ = n.Float64()
					}
					if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
						t.Errorf("%s: gridPos %+v off Grafana's 24-column grid", where, g)
					}
					for _, other := range placed {
						if g.overlaps(other) {
							t.Errorf("%s: gridPos %+v overlaps %+v", where, g, other)
						}
					}
					placed = append(placed, g)

					ds := pm["datasource"]
					if ds == nil {
						ds = parentDS
					}
					if uid := dsUID(ds); strings.HasPrefix(uid, "$") {
						if _, ok := vars[strings.Trim(uid, "${}")]; !ok {
							t.Errorf("%s: datasource %q names no template variable or input", where, uid)
						}
					}
					targets, _ := pm["targets"].([]any)
					for _, tg := range targets {
						tm, _ := tg.(map[string]any)
						tds := tm["datasource"]
						if tds == nil {
							tds = ds
						}
						expr, hasExpr := tm["expr"].(string)
						ty := dsType(tds, vars)
						// Prometheus queries only; a target of unknown type with an expr is one.
						if ty == "prometheus" || (ty == "" && hasExpr) {
							if !hasExpr || strings.TrimSpace(expr) == "" {
								t.Errorf("%s: Prometheus target %v without expr", where, tm["refId"])
							}
						}
					}
					// A collapsed row carries its panels.
					if sub, ok := pm["panels"].([]any); ok && len(sub) > 0 {
						checkPanels(sub, ds)
					}
				}
			}
			checkPanels(panels, nil)
		})
	}
}

func dsUID(ds any) string {
	switch ds := ds.(type) {
	case map[string]any:
		uid, _ := ds["uid"].(string)
		return uid
	case string:
		return ds
	}
	return ""
}

// ---------------------------------------------------------------------------------------------
// systemd

func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: it comes with Debian's systemd package (make deps installs it)")
	}
	unit, err := os.ReadFile("h3rum.service")
	if err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile("h3rum-local-clickhouse.conf")
	if err != nil {
		t.Fatal(err)
	}
	// verify refuses a unit whose ExecStart= names no executable file. It never runs it, so a
	// placeholder stands at a temporary path for /usr/local/bin/h3rum (deploy/README.md §4 installs
	// the binary there); the unit is otherwise verified as it is.
	const installed = "/usr/local/bin/h3rum"
	var execStarts []string
	for _, line := range strings.Split(string(unit), "\n") {
		if strings.HasPrefix(line, "ExecStart=") {
			execStarts = append(execStarts, line)
		}
	}
	if len(execStarts) != 1 || !strings.HasPrefix(execStarts[0], "ExecStart="+installed+" ") {
		t.Fatalf("want one ExecStart=%s …, have %q", installed, execStarts)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "h3rum")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit = bytes.Replace(unit, []byte("ExecStart="+installed+" "), []byte("ExecStart="+exe+" "), 1)

	for _, tc := range []struct {
		name   string
		dropIn bool
	}{{"unit", false}, {"unit with local-clickhouse drop-in", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			// The drop-in goes where §4 installs it: h3rum.service.d/local-clickhouse.conf.
			if err := os.MkdirAll(filepath.Join(d, "h3rum.service.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "h3rum.service"), unit, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.dropIn {
				if err := os.WriteFile(filepath.Join(d, "h3rum.service.d", "local-clickhouse.conf"), dropIn, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(analyze, "verify", "--man=no", filepath.Join(d, "h3rum.service"))
			cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=")
			out, err := cmd.CombinedOutput()
			// verify exits 0 on warnings (an unknown key, a value it ignores): any output fails.
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
		})
	}
}
