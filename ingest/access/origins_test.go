package access

import "testing"

func TestOrigins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow []string
		err   bool
		yes   []string
		no    []string
	}{
		{"default", nil, false, []string{"https://a.example", "", "null"}, nil},
		{"star", []string{"*"}, false, []string{"https://a.example"}, nil},
		{"list", []string{"https://Shop.example", "http://localhost:8080/"}, false,
			[]string{"https://shop.example", "HTTPS://SHOP.EXAMPLE", "http://localhost:8080"},
			[]string{"https://evil.example", "http://shop.example", "https://shop.example:444", "", "null"}},
		{"star among others", []string{"*", "https://a.example"}, true, nil, nil},
		{"path", []string{"https://a.example/x"}, true, nil, nil},
		{"no scheme", []string{"a.example"}, true, nil, nil},
		{"credentials", []string{"https://u:p@a.example"}, true, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseOrigins(tc.allow)
			if (err != nil) != tc.err {
				t.Fatalf("ParseOrigins(%q) error %v, want error %v", tc.allow, err, tc.err)
			}
			for _, y := range tc.yes {
				if !o.Allows(y) {
					t.Errorf("%q refused", y)
				}
			}
			for _, n := range tc.no {
				if o.Allows(n) {
					t.Errorf("%q allowed", n)
				}
			}
		})
	}
	var zero Origins
	if !zero.Allows("https://a.example") {
		t.Error("the zero Origins refused a page")
	}
}
