package beacon_test

import (
	"context"
	"testing"
	"time"
)

// consentWait bounds how long a run would take to send its first request
// without consent: the idle callback's timeout after load (3 s) and a
// margin. Seeing no request for that long after load means none at all.
const consentWait = 3500 * time.Millisecond

// storage is what the page holds in the browser's storage for its origin.
const storage = `(async () => {
  while (location.protocol != 'https:' || document.readyState != 'complete') await new Promise((r) => setTimeout(r, 10));
  return { version: window.h3rum?.version, local: localStorage.length, session: sessionStorage.length,
    cookie: document.cookie, idb: (await indexedDB.databases()).length, caches: (await caches.keys()).length };
})()`

type pageStorage struct {
	Version                    string
	Local, Session, IDB, Cache int
	Cookie                     string
}

// TestE2EConsent embeds the script with data-consent="wait" and with
// consent=wait in its URL: until the page calls h3rum.consent() the
// origins and the endpoint see no request at all and the page's storage
// stays empty; after it, a full run is reported, and still nothing is
// stored.
func TestE2EConsent(t *testing.T) {
	f := newFixture(t, false)
	for _, q := range []string{"?consent", "?url=consent"} {
		t.Run(q, func(t *testing.T) {
			before := f.requests.Load()
			b := startBrowserAt(t, f, f.page+q, true)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var st pageStorage
			evaluate(ctx, t, b, storage, &st)
			if st.Version == "" {
				t.Fatal("the page has loaded but not the script (no window.h3rum)")
			}
			time.Sleep(consentWait)
			if n := f.requests.Load() - before; n != 0 {
				t.Fatalf("%d requests to the origins or the endpoint within %v of load without consent", n, consentWait)
			}
			evaluate(ctx, t, b, storage, &st)
			if st != (pageStorage{Version: st.Version}) {
				t.Errorf("before consent the page stores %+v", st)
			}
			var v any
			evaluate(ctx, t, b, `h3rum.consent(), h3rum.consent(), 1`, &v) // twice: one run
			r := f.awaitReport(b, 30*time.Second)
			if r.Partial || r.BeaconVersion != st.Version || len(r.Samples) != e2eWarmup+1+2*e2eParallel {
				t.Errorf("after consent: partial %v, beacon %s, %d samples", r.Partial, r.BeaconVersion, len(r.Samples))
			}
			evaluate(ctx, t, b, storage, &st)
			if st != (pageStorage{Version: st.Version}) {
				t.Errorf("after the run the page stores %+v", st)
			}
		})
	}
}
