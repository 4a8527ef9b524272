package deploy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
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
