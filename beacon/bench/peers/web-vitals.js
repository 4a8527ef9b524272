// Google's web-vitals (its standard build, no attribution) as its README
// embeds it: every metric sent to an endpoint with sendBeacon.
import { onCLS, onFCP, onINP, onLCP, onTTFB } from 'web-vitals';

const send = (metric) => {
  const body = JSON.stringify(metric);
  navigator.sendBeacon('/vitals', body) || fetch('/vitals', { body, method: 'POST', keepalive: true });
};
onCLS(send);
onFCP(send);
onINP(send);
onLCP(send);
onTTFB(send);
