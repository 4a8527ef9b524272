package ingest

import (
	"testing"

	"github.com/h3rum/h3rum/beacon"
)

func TestBrowser(t *testing.T) {
	brands := func(kv ...string) []beacon.Brand {
		var b []beacon.Brand
		for i := 0; i+1 < len(kv); i += 2 {
			b = append(b, beacon.Brand{Brand: kv[i], Version: kv[i+1]})
		}
		return b
	}
	const (
		chromeUA  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
		edgeUA    = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91"
		firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:122.0) Gecko/20100101 Firefox/122.0"
		safariUA  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15"
		iosChrome = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1"
		headless  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36"
		samsung   = "Mozilla/5.0 (Linux; Android 13; SM-S901B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36"
		opera     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0"
		webkitgtk = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15" // MiniBrowser 2.50.6
		wpe       = "Mozilla/5.0 (Linux; aarch64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15 WPE"
		epiphany  = "Mozilla/5.0 (X11; Ubuntu; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15 Epiphany/605.1.15"
		oldDroid  = "Mozilla/5.0 (Linux; U; Android 4.0.3; de-de; Galaxy S II Build/GRJ22) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30"
		ipadOS    = "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1"
		googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	)
	for _, tc := range []struct {
		name      string
		brands    []beacon.Brand
		ua        string
		family    string
		major     int
		webdriver bool
		bot       bool
	}{
		{"chrome brands", brands("Not_A Brand", "8", "Chromium", "120", "Google Chrome", "120"), chromeUA, BrowserChrome, 120, false, false},
		{"grease first", brands("Not)A;Brand", "99", "Google Chrome", "127", "Chromium", "127"), "", BrowserChrome, 127, false, false},
		{"edge brands", brands("Microsoft Edge", "120", "Chromium", "120", "Not?A_Brand", "24"), edgeUA, BrowserEdge, 120, false, false},
		{"chromium only", brands("Chromium", "119", "Not A(Brand", "24"), chromeUA, BrowserChromium, 119, false, false},
		{"unknown vendor brand", brands("Brave", "121", "Not A(Brand", "99"), chromeUA, BrowserChromium, 121, false, false},
		{"only grease falls back to UA", brands("Not A(Brand", "99"), firefoxUA, BrowserFirefox, 122, false, false},
		{"headless brand", brands("HeadlessChrome", "156", "Chromium", "156"), headless, BrowserChrome, 156, false, true},
		{"chrome ua", nil, chromeUA, BrowserChrome, 121, false, false},
		{"edge ua", nil, edgeUA, BrowserEdge, 120, false, false},
		{"firefox ua", nil, firefoxUA, BrowserFirefox, 122, false, false},
		{"safari ua", nil, safariUA, BrowserSafari, 17, false, false},
		{"safari ipad", nil, ipadOS, BrowserSafari, 17, false, false},
		{"webkitgtk is not safari", nil, webkitgtk, BrowserWebKit, 0, false, false},
		{"webkitgtk under webdriver", nil, webkitgtk, BrowserWebKit, 0, true, true},
		{"wpe", nil, wpe, BrowserWebKit, 0, false, false},
		{"epiphany", nil, epiphany, BrowserWebKit, 0, false, false},
		{"old android browser", nil, oldDroid, BrowserWebKit, 0, false, false},
		{"no platform", nil, "AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15", BrowserWebKit, 0, false, false},
		{"chrome ios", nil, iosChrome, BrowserChrome, 120, false, false},
		{"samsung", nil, samsung, BrowserSamsung, 23, false, false},
		{"opera", nil, opera, BrowserOpera, 106, false, false},
		{"headless ua", nil, headless, BrowserChrome, 156, false, true},
		{"webdriver", nil, chromeUA, BrowserChrome, 121, true, true},
		{"googlebot", nil, googlebot, BrowserOther, 0, false, true},
		{"curl", nil, "curl/8.5.0", BrowserOther, 0, false, true},
		{"empty", nil, "", BrowserOther, 0, false, false},
		{"huge version", nil, "Chrome/99999999999999999999", BrowserChrome, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, m := browserOf(tc.brands, tc.ua)
			if f != tc.family || m != tc.major {
				t.Errorf("browserOf = %q %d, want %q %d", f, m, tc.family, tc.major)
			}
			if bot := isBot(beacon.Client{Brands: tc.brands, Webdriver: tc.webdriver}, tc.ua); bot != tc.bot {
				t.Errorf("isBot = %v, want %v", bot, tc.bot)
			}
		})
	}
}
