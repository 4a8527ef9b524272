package ingest

import "strings"

// continentTable lists ISO 3166-1 alpha-2 codes by continent, with the
// continent codes and assignments GeoIP2 databases use (Turkey, Cyprus and
// the Caucasus in Asia, Russia in Europe, US Minor Outlying Islands in
// Oceania). It fills the continent when a database (DB-IP's flat layout) or a
// CDN country header gives only a country. One line per continent: its code,
// then its countries, each code two letters after a single space.
const continentTable = "" +
	"AF AO BF BI BJ BW CD CF CG CI CM CV DJ DZ EG EH ER ET GA GH GM GN GQ GW KE KM LR LS LY MA MG ML MR MU MW MZ NA NE NG RE RW SC SD SH SL SN SO SS ST SZ TD TG TN TZ UG YT ZA ZM ZW\n" +
	"AN AQ BV GS HM TF\n" +
	"AS AE AF AM AZ BD BH BN BT CC CN CX CY GE HK ID IL IN IO IQ IR JO JP KG KH KP KR KW KZ LA LB LK MM MN MO MV MY NP OM PH PK PS QA SA SG SY TH TJ TL TM TR TW UZ VN YE\n" +
	"EU AD AL AT AX BA BE BG BY CH CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE LI LT LU LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM UA VA XK\n" +
	"NA AG AI AW BB BL BM BQ BS BZ CA CR CU CW DM DO GD GL GP GT HN HT JM KN KY LC MF MQ MS MX NI PA PM PR SV SX TC TT US VC VG VI\n" +
	"OC AS AU CK FJ FM GU KI MH MP NC NF NR NU NZ PF PG PN PW SB TK TO TV UM VU WF WS\n" +
	"SA AR BO BR CL CO EC FK GF GY PE PY SR UY VE\n"

// continentOf returns the continent code of an upper-case ISO country code,
// or "" when the country is not known.
func continentOf(country string) string {
	if len(country) != 2 {
		return ""
	}
	for line := range strings.Lines(continentTable) {
		for i := 3; i+2 <= len(line); i += 3 {
			if line[i:i+2] == country {
				return line[:2]
			}
		}
	}
	return ""
}

// normCountry upper-cases an ISO country code and maps placeholders (ZZ
// unknown, XX, T1 Tor, A1 anonymous proxy, A2 satellite) and anything that
// is not two ASCII letters to "".
func normCountry(cc string) string {
	cc = strings.TrimSpace(cc)
	if len(cc) != 2 {
		return ""
	}
	b := []byte{cc[0], cc[1]}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c >= 'A' && c <= 'Z':
		default:
			return ""
		}
	}
	switch s := string(b); s {
	case "ZZ", "XX", "T1", "A1", "A2":
		return ""
	default:
		return s
	}
}
