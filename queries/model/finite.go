package model

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// CheckFinite returns an error naming the first NaN or infinity in v by
// its JSON path ("protocols[0].failed_estimated_requests is +Inf"), or
// nil. JSON has no such numbers: encoding/json refuses them after a
// handler has sent its status, and html/template writes null in their
// place, so a report is checked before it is answered or written.
func CheckFinite(v any) error {
	path, f, ok := firstNonFinite(reflect.ValueOf(v), "")
	if !ok {
		return nil
	}
	return fmt.Errorf("%s is %v, which JSON cannot carry", strings.TrimPrefix(path, "."), f)
}

// firstNonFinite walks what encoding/json would write of v: exported
// fields under their JSON names, elements, map values by sorted key.
func firstNonFinite(v reflect.Value, path string) (string, float64, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path, f, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return firstNonFinite(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p, f, ok := firstNonFinite(v.Index(i), path+"["+strconv.Itoa(i)+"]"); ok {
				return p, f, true
			}
		}
	case reflect.Map:
		keys := make(map[string]reflect.Value, v.Len())
		for _, k := range v.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if p, f, ok := firstNonFinite(v.MapIndex(keys[k]), path+"["+strconv.Quote(k)+"]"); ok {
				return p, f, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || name == "-" {
				continue
			}
			p := path
			switch {
			case name != "":
				p += "." + name
			case !sf.Anonymous:
				p += "." + sf.Name
			}
			if p, f, ok := firstNonFinite(v.Field(i), p); ok {
				return p, f, true
			}
		}
	}
	return "", 0, false
}
