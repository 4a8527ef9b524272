package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Region is one emulated place: who it stands for and the path between it and
// the collector. The file format is described in README.md ("Regions file").
type Region struct {
	// Name names the region in namespace names and reports: 1 to 16 of
	// a-z, 0-9 and '-', starting with a letter.
	Name string `json:"name"`
	// About says in words what the region stands for. Optional.
	About string `json:"about,omitempty"`
	// Country is the ISO 3166-1 alpha-2 code the region's prefix maps to
	// ("DE"); placeholders (XX, ZZ, T1, EU, AP) are refused.
	Country string `json:"country"`
	// Continent is the two-letter continent code (AF AN AS EU NA OC SA), as
	// in GeoIP databases.
	Continent string `json:"continent"`
	// Up is the path from the region to the collector; Down the way back.
	Up   Path `json:"up"`
	Down Path `json:"down"`
	// BlockUDP drops every UDP packet between the region and the collector,
	// both ways and silently, as a middlebox that blocks QUIC does. Default
	// false.
	BlockUDP bool `json:"block_udp,omitempty"`
	// Runs is how many Chromium visits the region gets, instead of the
	// lab's --runs: more where a comparison needs them (a tail under loss).
	// Optional; 1 to 1000.
	Runs int `json:"runs,omitempty"`
}

// Path is one direction of a region's link. The zero Path is a perfect wire:
// no delay, no loss, no rate limit.
type Path struct {
	// DelayMS is the one-way delay in milliseconds. Default 0; at most 10000.
	DelayMS float64 `json:"delay_ms"`
	// JitterMS is the standard deviation, in milliseconds, of a normal
	// variation added to the delay (clamped so that no packet overtakes
	// another: see Pump). Default 0; at most DelayMS.
	JitterMS float64 `json:"jitter_ms,omitempty"`
	// LossPct is the share of packets lost, in percent. Default 0.
	LossPct float64 `json:"loss_pct,omitempty"`
	// LossBurst is the mean length, in packets, of a run of lost packets
	// (Gilbert-Elliott). 0 or 1: each packet is lost independently.
	LossBurst float64 `json:"loss_burst,omitempty"`
	// RateKbit is the link's rate in kbit/s: each packet takes its size over
	// the rate to send, and queues behind the ones before it. 0: unlimited.
	RateKbit int `json:"rate_kbit,omitempty"`
}

// regionsFile is the file's top level. Only "regions" is read; the object
// leaves room for settings that apply to the whole lab.
type regionsFile struct {
	Regions []json.RawMessage `json:"regions"`
}

// MaxRegions is the number of regions a lab can hold: one /24 each in
// 198.18.1.0–198.18.254.0.
const MaxRegions = 254

// LoadRegions reads and checks a regions file.
func LoadRegions(path string) ([]Region, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading regions file: %w", err)
	}
	return ParseRegions(path, b)
}

// ParseRegions decodes a regions file (JSON, unknown fields refused) and
// checks every region and the list as a whole. Errors name the file and line
// for syntax and type errors, and the field path ("regions[2] (far).up.loss_pct")
// for values out of range. name is used only in errors.
func ParseRegions(name string, data []byte) ([]Region, error) {
	var f regionsFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, positioned(data, 0, err))
	}
	if f.Regions == nil {
		return nil, fmt.Errorf("%s: no \"regions\" list", name)
	}
	regions := make([]Region, len(f.Regions))
	var errs []error
	for i, raw := range f.Regions {
		if err := decodeStrict(raw, &regions[i]); err != nil {
			start := bytes.Index(data, raw) // raw is a sub-slice's copy: find it again for the line
			return nil, fmt.Errorf("%s: regions[%d]: %w", name, i, positioned(data, max(start, 0), err))
		}
	}
	for i := range regions {
		if err := regions[i].validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: regions[%d]%s%w", name, i, label(regions[i].Name), err))
		}
	}
	if err := validateList(regions); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return regions, nil
}

func label(name string) string {
	if name == "" {
		return "."
	}
	return " (" + name + ")."
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the top-level value")
	}
	return nil
}

// positioned adds the line and column of a decoding error, counted in data
// from base (the offset of the decoded value in data).
func positioned(data []byte, base int, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return err
	}
	// Offset counts the bytes read, through the offending one.
	p := min(base+max(int(off)-1, 0), len(data))
	line := 1 + bytes.Count(data[:p], []byte("\n"))
	col := p - bytes.LastIndexByte(data[:p], '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

var (
	nameRE    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)
	countryRE = regexp.MustCompile(`^[A-Z]{2}$`)
	// Codes GeoIP databases and analytics use for "unknown" or for groups,
	// which a lab region must not pretend to be.
	placeholderCountries = map[string]bool{"XX": true, "ZZ": true, "T1": true, "EU": true, "AP": true, "A1": true, "A2": true, "O1": true}
	continents           = map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}
)

func (r *Region) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if !nameRE.MatchString(r.Name) {
		bad("name", "%q is not 1 to 16 of a-z, 0-9 and '-' starting with a letter", r.Name)
	}
	switch {
	case !countryRE.MatchString(r.Country):
		bad("country", "%q is not an ISO 3166-1 alpha-2 code such as \"DE\"", r.Country)
	case placeholderCountries[r.Country]:
		bad("country", "%q is a placeholder, not a country", r.Country)
	}
	if !continents[r.Continent] {
		bad("continent", "%q is not one of AF AN AS EU NA OC SA", r.Continent)
	}
	if r.Runs < 0 || r.Runs > 1000 {
		bad("runs", "%d is outside [1, 1000] (0 or absent: the lab's --runs)", r.Runs)
	}
	for _, p := range []struct {
		name string
		path Path
	}{{"up", r.Up}, {"down", r.Down}} {
		if err := p.path.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

func (p Path) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	switch {
	case !(p.DelayMS >= 0 && p.DelayMS <= 10000):
		bad("delay_ms", "%v is outside [0, 10000]", p.DelayMS)
	case !(p.JitterMS >= 0 && p.JitterMS <= p.DelayMS):
		bad("jitter_ms", "%v is outside [0, delay_ms = %v]", p.JitterMS, p.DelayMS)
	}
	if !(p.LossPct >= 0 && p.LossPct < 100) {
		bad("loss_pct", "%v is outside [0, 100)", p.LossPct)
	}
	switch {
	case !(p.LossBurst == 0 || p.LossBurst >= 1) || p.LossBurst > 1000:
		bad("loss_burst", "%v is neither 0 nor within [1, 1000] packets", p.LossBurst)
	case p.LossBurst > 1 && p.LossPct/100 > p.LossBurst/(1+p.LossBurst):
		// The good state's exit probability q = p/(b·(1−p)) must stay ≤ 1.
		bad("loss_burst", "%v packets is too long a burst for loss_pct %v", p.LossBurst, p.LossPct)
	}
	if p.RateKbit < 0 || p.RateKbit > 100_000_000 {
		bad("rate_kbit", "%d is outside [0, 100000000]", p.RateKbit)
	}
	return errors.Join(errs...)
}

func validateList(regions []Region) error {
	var errs []error
	if len(regions) == 0 {
		errs = append(errs, errors.New("regions: the list is empty"))
	}
	if len(regions) > MaxRegions {
		errs = append(errs, fmt.Errorf("regions: %d regions, at most %d", len(regions), MaxRegions))
	}
	seen := map[string]int{}
	for i, r := range regions {
		if j, ok := seen[r.Name]; ok && r.Name != "" {
			errs = append(errs, fmt.Errorf("regions[%d].name: %q is also regions[%d]", i, r.Name, j))
		}
		seen[r.Name] = i
	}
	return errors.Join(errs...)
}

// String is the region in one line, as the lab prints it.
func (r Region) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s): up %s; down %s", r.Name, r.Country, r.Continent, r.Up, r.Down)
	if r.BlockUDP {
		b.WriteString(", UDP blocked")
	}
	return b.String()
}

// String is the path in one line ("50 ms ±2, 1 % loss (bursts of 3), 10000 kbit/s").
func (p Path) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%g ms", p.DelayMS)
	if p.JitterMS > 0 {
		fmt.Fprintf(&b, " ±%g", p.JitterMS)
	}
	if p.LossPct > 0 {
		fmt.Fprintf(&b, ", %g %% loss", p.LossPct)
		if p.LossBurst > 1 {
			fmt.Fprintf(&b, " (bursts of %g)", p.LossBurst)
		}
	}
	if p.RateKbit > 0 {
		fmt.Fprintf(&b, ", %d kbit/s", p.RateKbit)
	}
	return b.String()
}
