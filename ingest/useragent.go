package ingest

import (
	"strconv"
	"strings"

	"github.com/h3rum/h3rum/beacon"
)

// Browser families stored in the browser column.
const (
	BrowserChrome   = "Chrome"
	BrowserChromium = "Chromium"
	BrowserEdge     = "Edge"
	BrowserFirefox  = "Firefox"
	BrowserOpera    = "Opera"
	BrowserSafari   = "Safari"
	BrowserSamsung  = "Samsung Internet"
	// BrowserWebKit is a WebKit browser that is not Apple's Safari: WebKitGTK
	// (GNOME Web, MiniBrowser), WPE, the old Android browser. It says
	// "Safari/" and "Version/" for compatibility, but not on an Apple platform.
	BrowserWebKit = "WebKit"
	BrowserOther  = "Other"
	// BrowserAgent is `h3rum agent`, whatever its report says.
	BrowserAgent = "Agent"
)

// browserOf returns the browser family and major version, preferring the
// UA-CH brands (which Chromium browsers send and which are not frozen) and
// falling back to the User-Agent string.
func browserOf(brands []beacon.Brand, ua string) (family string, major int) {
	if family, major, ok := browserFromBrands(brands); ok {
		return family, major
	}
	return browserFromUA(ua)
}

// brandFamily maps a UA-CH brand name to a family and a rank: a vendor
// brand wins over the generic "Chromium" brand every Chromium browser lists.
func brandFamily(brand string) (family string, rank int) {
	switch brand {
	case "Microsoft Edge":
		return BrowserEdge, 2
	case "Opera", "Opera GX":
		return BrowserOpera, 2
	case "Samsung Internet":
		return BrowserSamsung, 2
	case "Google Chrome":
		return BrowserChrome, 2
	case "HeadlessChrome":
		return BrowserChrome, 2
	case "Chromium":
		return BrowserChromium, 1
	}
	return "", 0
}

func browserFromBrands(brands []beacon.Brand) (string, int, bool) {
	best, bestRank, major := "", 0, 0
	for _, b := range brands {
		if isGreaseBrand(b.Brand) {
			continue
		}
		f, rank := brandFamily(b.Brand)
		if rank == 0 {
			// An unknown vendor brand (Brave, Vivaldi, YaBrowser…): keep it
			// as a Chromium derivative below named vendors.
			f, rank = BrowserChromium, 1
		}
		if rank > bestRank {
			best, bestRank, major = f, rank, leadingInt(b.Version)
		}
	}
	return best, major, bestRank > 0
}

// isGreaseBrand reports whether a UA-CH brand is one of the deliberately
// varied "Not A Brand" entries (e.g. "Not_A Brand", "Not)A;Brand").
func isGreaseBrand(brand string) bool {
	var b strings.Builder
	for _, c := range strings.ToLower(brand) {
		if c >= 'a' && c <= 'z' {
			b.WriteRune(c)
		}
	}
	return b.String() == "notabrand"
}

func browserFromUA(ua string) (string, int) {
	// Order matters: Edge, Opera and Samsung also say Chrome and Safari;
	// Chrome also says Safari.
	for _, t := range []struct{ token, family string }{
		{"Edg/", BrowserEdge},
		{"EdgA/", BrowserEdge},
		{"EdgiOS/", BrowserEdge},
		{"OPR/", BrowserOpera},
		{"SamsungBrowser/", BrowserSamsung},
		{"Firefox/", BrowserFirefox},
		{"FxiOS/", BrowserFirefox},
		{"CriOS/", BrowserChrome},
		{"HeadlessChrome/", BrowserChrome},
		{"Chrome/", BrowserChrome},
		{"Chromium/", BrowserChromium},
	} {
		if i := strings.Index(ua, t.token); i >= 0 {
			return t.family, leadingInt(ua[i+len(t.token):])
		}
	}
	if strings.Contains(ua, "Safari/") {
		if !applePlatform(ua) {
			// WebKitGTK's "Version/" is no release of anything (2.50.6 says
			// "Version/60.5"): the major is unknown.
			return BrowserWebKit, 0
		}
		if i := strings.Index(ua, "Version/"); i >= 0 {
			return BrowserSafari, leadingInt(ua[i+len("Version/"):])
		}
		return BrowserSafari, 0
	}
	return BrowserOther, 0
}

// applePlatform reports whether the User-Agent's platform, its first
// parenthesis, is a Mac or an iOS device: only there is a Safari UA Safari.
func applePlatform(ua string) bool {
	i := strings.IndexByte(ua, '(')
	if i < 0 {
		return false
	}
	p := ua[i+1:]
	if j := strings.IndexByte(p, ')'); j >= 0 {
		p = p[:j]
	}
	for _, s := range []string{"Macintosh", "iPhone", "iPad", "iPod"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	return false
}

// leadingInt parses the digits at the start of s ("121.0.6167" → 121),
// 0 when there are none; values too large for the column become 0.
func leadingInt(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, err := strconv.Atoi(s[:n])
	if err != nil || v > 65535 {
		return 0
	}
	return v
}

// isBot reports whether the client is automated: the page said
// navigator.webdriver, a brand is HeadlessChrome, or the User-Agent names a
// headless browser, crawler or HTTP library.
func isBot(c beacon.Client, ua string) bool {
	if c.Webdriver {
		return true
	}
	for _, b := range c.Brands {
		if b.Brand == "HeadlessChrome" {
			return true
		}
	}
	l := strings.ToLower(ua)
	for _, s := range []string{
		"headless", "phantomjs", "lighthouse", "pagespeed", "bot/", "bot;", "crawl", "spider", "slurp",
		"selenium", "puppeteer", "playwright", "webdriver", "python-", "curl/", "wget/",
		"go-http-client", "okhttp", "java/", "node-fetch", "axios/", "facebookexternalhit",
	} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
