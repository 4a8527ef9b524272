package origin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// echo answers /echo (when Server.Echo is set) with what the server saw of
// the request and its connection, as plain text, for debugging a client or
// a proxy in front of the server. It can reveal cookies and internal
// headers, hence off by default.
func (o *testOrigin) echo(w http.ResponseWriter, r *http.Request, ci *connInfo, creq uint64) {
	var b strings.Builder
	fmt.Fprintf(&b, "origin: %s\n%s %s %s\nhost: %s\nremote: %s\n", o.label, r.Method, r.RequestURI, r.Proto, r.Host, r.RemoteAddr)
	if r.TLS != nil {
		fmt.Fprintf(&b, "tls: %s alpn=%q sni=%q resumed=%t early=%t\n",
			tlsVersionName(r.TLS.Version), r.TLS.NegotiatedProtocol, r.TLS.ServerName, r.TLS.DidResume, EarlyData(r))
	}
	if ci != nil {
		st := ci.stats(time.Now())
		fmt.Fprintf(&b, "connection: id=%s request=%d rtt=%s minrtt=%s rttvar=%s lost=%d\n", ci.id, creq, st.rtt, st.minRTT, st.rttVar, st.lost)
	}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	h := w.Header()
	h["Cache-Control"] = o.srv.hdr.noStore
	h["Content-Type"] = o.srv.hdr.textPlain
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(b.String()))
	}
}
