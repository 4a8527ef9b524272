package beacon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// JSON syntax of the wire format: the wire types, the general decoding
// path and the key checks encoding/json does not make. The fast path for
// canonical reports is in fastpath.go; what the values mean is checked in
// validate.go.

// Wire types: pointers tell a missing field from a zero one.
type (
	wireReport struct {
		V    *int         `json:"v"`
		ID   *string      `json:"id"`
		Site *string      `json:"site"`
		O    *string      `json:"o"`
		BV   *string      `json:"bv"`
		P    *bool        `json:"p"`
		MT   *float64     `json:"mt"`
		Alt  *int         `json:"alt"`
		Par  *wireParams  `json:"par"`
		C    *wireClient  `json:"c"`
		X    *wireErrors  `json:"x"`
		S    []wireSample `json:"s"`
	}
	wireErrors struct {
		Idle   *int `json:"idle"`
		Warmup *int `json:"warmup"`
		Batch  *int `json:"batch"`
		Timing *int `json:"timing"`
		Send   *int `json:"send"`
	}
	wireParams struct {
		N   *int    `json:"n"`
		W   *int    `json:"w"`
		B   *int    `json:"b"`
		Ord *string `json:"ord"`
		Trg *string `json:"trg"`
		// extra holds the design parameters sent, by name; nil when
		// there are none.
		extra map[string]int
	}
	wireClient struct {
		BR  [][]string `json:"br"`
		PF  *string    `json:"pf"`
		MB  *bool      `json:"mb"`
		ET  *string    `json:"et"`
		RTT *float64   `json:"rtt"`
		DL  *float64   `json:"dl"`
		WD  *bool      `json:"wd"`
	}
	wireSample struct {
		Q   *int        `json:"q"`
		Ph  *string     `json:"ph"`
		W   *string     `json:"w"`
		G   *string     `json:"g"`
		St  *float64    `json:"st"`
		D   *float64    `json:"d"`
		DNS *float64    `json:"dns"`
		Con *float64    `json:"con"`
		TLS *float64    `json:"tls"`
		TF  *float64    `json:"tf"`
		DL  *float64    `json:"dl"`
		R   *bool       `json:"r"`
		TS  *int        `json:"ts"`
		E   *string     `json:"e"`
		SV  *wireServer `json:"sv"`
	}
)

// wireServer is a sample's "sv" object as read: each metric's value at
// its place in serverTimingMetrics, by its kind in num (a duration), n (a
// count) or str (proto, text); sent has bit i set when metric i was there
// and not null.
type wireServer struct {
	sent uint32
	num  [len(serverTimingMetrics)]float64
	n    [len(serverTimingMetrics)]int
	str  [len(serverTimingMetrics)]string
}

// UnmarshalJSON is the general path's reading of sv: an object whose keys
// are metric names, each value of its kind's JSON type (null as if
// absent). An unknown key fails as encoding/json's DisallowUnknownFields
// would, a wrong type with the key's path, so that decodeWire classifies
// them as it does every other field.
func (w *wireServer) UnmarshalJSON(b []byte) error {
	raw, err := rawObject[wireServer](b, func(k string) bool { return metricIndex(k) >= 0 })
	if err != nil {
		return err
	}
	for i, m := range serverTimingMetrics {
		v, ok := raw[m.name]
		if !ok || string(v) == "null" {
			continue
		}
		var err error
		switch m.kind {
		case metricDuration:
			err = json.Unmarshal(v, &w.num[i])
		case metricCount:
			err = json.Unmarshal(v, &w.n[i])
		default:
			err = json.Unmarshal(v, &w.str[i])
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = m.name
			return te
		}
		if err != nil {
			return err
		}
		w.sent |= 1 << i
	}
	return nil
}

// wireParamsKeys are par's own keys, as wireParams' tags name them.
var wireParamsKeys = func() (keys []string) {
	t := reflect.TypeFor[wireParams]()
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("json"); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}()

// UnmarshalJSON is the general path's reading of par: its own keys as
// encoding/json reads a struct, and each design parameter of the embedding
// (ScriptParam.design) under its name as an integer (null as if absent).
// Any other key fails as encoding/json's DisallowUnknownFields would, a
// wrong type with the key's path, as wireServer's does.
func (w *wireParams) UnmarshalJSON(b []byte) error {
	raw, err := rawObject[wireParams](b, func(k string) bool {
		if slices.Contains(wireParamsKeys, k) {
			return true
		}
		_, i := designIndex(k)
		return i >= 0
	})
	if err != nil {
		return err
	}
	type fields wireParams // without this method: encoding/json's reading
	if err := json.Unmarshal(b, (*fields)(w)); err != nil {
		return err
	}
	for _, p := range scriptParamList {
		v, ok := raw[p.Name]
		if !p.design || !ok || string(v) == "null" {
			continue
		}
		var n int
		if err := json.Unmarshal(v, &n); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = p.Name
				return te
			}
			return err
		}
		if w.extra == nil {
			w.extra = make(map[string]int)
		}
		w.extra[p.Name] = n
	}
	return nil
}

// rawObject reads b, a JSON object of a value of type T, by key: a value
// of another JSON type fails as T's would, and a key that known refuses
// as encoding/json's DisallowUnknownFields would (keys checked in order,
// so that the error does not depend on the map's).
func rawObject[T any](b []byte, known func(string) bool) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &json.UnmarshalTypeError{Value: te.Value, Type: reflect.TypeFor[T](), Offset: te.Offset}
		}
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !known(k) {
			return nil, fmt.Errorf("json: unknown field %q", k)
		}
	}
	return raw, nil
}

// knownVersion reports whether Decode reads wire-format version v.
func knownVersion(v int) bool { return v >= MinVersion && v <= Version }

// decodeWire is the general path: encoding/json plus the checks it does
// not make, with the precedence of rejections PROTOCOL.md gives.
func decodeWire(data []byte) (wireReport, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireReport
	err := dec.Decode(&w)
	// The key check runs on every report and its verdict comes first. On
	// bytes the decoder accepted it skips its own validity pass.
	if kerr := checkKeys(data, err == nil && onlySpace(data[dec.InputOffset():])); kerr != nil {
		return w, kerr
	}
	if err != nil || w.V == nil || !knownVersion(*w.V) {
		// Classify: a report of another version fails for that reason
		// first, whatever else is wrong with it by v1's rules.
		var peek struct {
			V json.RawMessage `json:"v"`
		}
		if perr := json.Unmarshal(data, &peek); perr != nil {
			return w, errorf(ReasonJSON, "%v", perr)
		}
		if peek.V == nil || string(peek.V) == "null" {
			return w, errorf(ReasonVersion, `missing "v"`)
		}
		if v := string(peek.V); len(v) != 1 || !knownVersion(int(v[0])-'0') {
			return w, errorf(ReasonVersion, "unsupported version %.16s, want %d to %d", peek.V, MinVersion, Version)
		}
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return w, errorf(ReasonField, "%s: JSON %s where %s belongs", te.Field, te.Value, te.Type).at(te.Field)
		}
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return w, errorf(ReasonField, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return w, errorf(ReasonJSON, "%v", err)
	}
	return w, nil
}

// checkKeys rejects what encoding/json would accept loosely: invalid
// JSON or trailing data, a top level other than an object, nesting deeper
// than the format has, and object keys that are duplicated, escaped or not
// lower-case ASCII (encoding/json matches keys case-insensitively, with
// Unicode folding, and keeps the last duplicate). It scans the bytes once
// without allocating for typical reports; valid says data is already known
// to be one valid JSON value.
func checkKeys(data []byte, valid bool) *DecodeError {
	if !valid && !json.Valid(data) {
		var v json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil {
			return errorf(ReasonJSON, "%v", err)
		}
		return errorf(ReasonJSON, "invalid JSON")
	}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' {
		return errorf(ReasonJSON, "report is not a JSON object")
	}
	type frame struct {
		obj  bool
		keys [16][]byte
		n    int
	}
	var stack [maxDepth + 1]frame
	depth, wantKey := 0, false
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			j, escaped := i+1, false
			for ; data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
					escaped = true
				}
			}
			if wantKey {
				k := data[i+1 : j]
				if escaped || !isKey(k) {
					return errorf(ReasonField, "field name %.20q is not lower-case ASCII", k)
				}
				f := &stack[depth]
				for _, seen := range f.keys[:f.n] {
					if string(seen) == string(k) {
						return errorf(ReasonField, "duplicate field %q", k)
					}
				}
				if f.n == len(f.keys) {
					return errorf(ReasonField, "more than %d fields in an object", len(f.keys))
				}
				f.keys[f.n] = k
				f.n++
				wantKey = false
			}
			i = j
		case '{', '[':
			if depth == maxDepth {
				return errorf(ReasonLimit, "nested deeper than %d levels", maxDepth)
			}
			depth++
			stack[depth].obj, stack[depth].n = data[i] == '{', 0
			wantKey = stack[depth].obj
		case '}', ']':
			depth--
			wantKey = false
		case ',':
			wantKey = stack[depth].obj
		}
	}
	return nil
}

// onlySpace reports whether b holds nothing but JSON whitespace.
func onlySpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func isKey(k []byte) bool {
	if len(k) == 0 || len(k) > 16 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
