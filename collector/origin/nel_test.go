package origin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNELHeaders checks the policy both origins send: on the first response
// of each connection (a browser keeps it for max_age), over TCP and QUIC,
// naming the other origin's /reports unless an endpoint is configured.
func TestNELHeaders(t *testing.T) {
	ts := startServer(t, &Server{NEL: NEL{MaxAge: time.Hour, SuccessFraction: 0.01, FailureFraction: 1, IncludeSubdomains: true}})
	h3c, _ := ts.h3Client(t, nil)
	for _, tc := range []struct {
		name, base, to string
		client         *http.Client
	}{
		{"h3 origin over h2", ts.h3, ts.h2 + "/reports", ts.tcpClient(t, false, nil)},
		{"h3 origin over h1", ts.h3, ts.h2 + "/reports", ts.tcpClient(t, true, nil)},
		{"h3 origin over h3", ts.h3, ts.h2 + "/reports", h3c},
		{"h2 origin over h2", ts.h2, ts.h3 + "/reports", ts.tcpClient(t, false, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := do(t, tc.client, "GET", tc.base+"/probe", nil)
			var policy struct {
				ReportTo          string  `json:"report_to"`
				MaxAge            int     `json:"max_age"`
				IncludeSubdomains bool    `json:"include_subdomains"`
				SuccessFraction   float64 `json:"success_fraction"`
				FailureFraction   float64 `json:"failure_fraction"`
			}
			if err := json.Unmarshal([]byte(resp.Header.Get("NEL")), &policy); err != nil {
				t.Fatalf("NEL %q: %v", resp.Header.Get("NEL"), err)
			}
			if policy.ReportTo != nelGroup || policy.MaxAge != 3600 || !policy.IncludeSubdomains ||
				policy.SuccessFraction != 0.01 || policy.FailureFraction != 1 {
				t.Errorf("NEL policy %+v", policy)
			}
			var group struct {
				Group     string `json:"group"`
				MaxAge    int    `json:"max_age"`
				Endpoints []struct {
					URL string `json:"url"`
				} `json:"endpoints"`
			}
			if err := json.Unmarshal([]byte(resp.Header.Get("Report-To")), &group); err != nil {
				t.Fatalf("Report-To %q: %v", resp.Header.Get("Report-To"), err)
			}
			if group.Group != nelGroup || group.MaxAge != 3600 || len(group.Endpoints) != 1 || group.Endpoints[0].URL != tc.to {
				t.Errorf("Report-To %+v, want endpoint %s", group, tc.to)
			}
			if got, want := resp.Header.Get("Reporting-Endpoints"), fmt.Sprintf("%s=%q", nelGroup, tc.to); got != want {
				t.Errorf("Reporting-Endpoints %q, want %q", got, want)
			}
			// Later responses on the same connection do not repeat it.
			resp, _ = do(t, tc.client, "GET", tc.base+"/probe", nil)
			if v := resp.Header.Get("NEL") + resp.Header.Get("Report-To") + resp.Header.Get("Reporting-Endpoints"); v != "" {
				t.Errorf("second response on the connection repeats the policy: %q", v)
			}
		})
	}
}

func TestNELEndpointAndOff(t *testing.T) {
	ts := startServer(t, &Server{NEL: NEL{MaxAge: time.Minute, FailureFraction: 1, Endpoint: "https://ingest.example/reports"}})
	resp, _ := do(t, ts.tcpClient(t, false, nil), "GET", ts.h2+"/healthz", nil)
	if !strings.Contains(resp.Header.Get("Report-To"), `"url":"https://ingest.example/reports"`) {
		t.Errorf("Report-To %q, want the configured endpoint", resp.Header.Get("Report-To"))
	}
	off := startServer(t, &Server{})
	resp, _ = do(t, off.tcpClient(t, false, nil), "GET", off.h3+"/probe", nil)
	if v := resp.Header.Get("NEL") + resp.Header.Get("Report-To") + resp.Header.Get("Reporting-Endpoints"); v != "" {
		t.Errorf("NEL headers without a policy: %q", v)
	}
	for _, n := range []NEL{{MaxAge: time.Hour, SuccessFraction: 2}, {MaxAge: time.Hour, FailureFraction: -0.1},
		{MaxAge: 1500 * time.Millisecond}, {MaxAge: time.Hour, Endpoint: "http://ingest.example/reports"}} {
		if errs := n.validate(); len(errs) == 0 {
			t.Errorf("%+v accepted", n)
		}
	}
}
