// Plausible's official tracker as its README embeds it: a pageview on
// init, sent to the page's own /api/event. captureOnLocalhost because the
// bench page is on localhost (it skips one regular expression a real
// site's visit runs, so the peer, if anything, looks cheaper).
import { init } from '@plausible-analytics/tracker';

init({ domain: 'e2e', endpoint: '/api/event', captureOnLocalhost: true });
