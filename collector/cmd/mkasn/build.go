package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// databaseType is the metadata type geoip2 readers (Go, Python, Java, …)
// accept for the ASN lookup; the layout is MaxMind's GeoLite2-ASN.
const databaseType = "GeoLite2-ASN"

// builder turns ip-location-db ASN rows into a GeoLite2-ASN tree.
type builder struct {
	tree *mmdbwriter.Tree
	// values shares one record per (ASN, organisation); the writer would
	// deduplicate fresh ones too, but sharing spares building and hashing
	// a record for every prefix.
	values map[asnKey]mmdbtype.Map

	rows     int // data rows read
	networks int // prefixes inserted
	skipped  int // prefixes in reserved or IPv4-aliased space (see insert)
	// leftOut says why, for the first few skipped prefixes.
	leftOut []string
}

const maxLeftOut = 10

type asnKey struct {
	asn uint32
	org string
}

func newBuilder(description string) (*builder, error) {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: databaseType,
		Description:  map[string]string{"en": description},
		RecordSize:   28,
		// GeoLite2's own choices: ::ffff:0:0/96, 2001::/32 (Teredo) and
		// 2002::/16 (6to4) resolve through the IPv4 address they carry, and
		// reserved networks (private, loopback, documentation) stay empty.
		DisableIPv4Aliasing:     false,
		IncludeReservedNetworks: false,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the database tree: %w", err)
	}
	return &builder{tree: tree, values: make(map[asnKey]mmdbtype.Map)}, nil
}

// addCSV reads one ip-location-db ASN file: rows of ip_range_start,
// ip_range_end, autonomous_system_number, autonomous_system_organization,
// with inclusive ranges of addresses in text form and no header (a header
// line is tolerated). name is used in error messages. Where rows overlap,
// the later one wins: the published file has such a pair (214.95.0.0–
// 215.0.255.255 AS749, then 215.0.0.0–215.1.3.255 AS721), and the later,
// narrower row is the better guess.
func (b *builder) addCSV(ctx context.Context, name string, r io.Reader) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	cr.ReuseRecord = true
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("%s:%d: %w", name, perr.Line, perr.Err)
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if n == 0 && len(rec) > 0 && strings.TrimSpace(rec[0]) == "ip_range_start" {
			continue
		}
		if n%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := b.addRow(rec); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

func (b *builder) addRow(rec []string) error {
	if len(rec) != 4 {
		return fmt.Errorf("%d fields, want 4 (ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization)", len(rec))
	}
	start, err := netip.ParseAddr(strings.TrimSpace(rec[0]))
	if err != nil {
		return fmt.Errorf("ip_range_start: %w", err)
	}
	end, err := netip.ParseAddr(strings.TrimSpace(rec[1]))
	if err != nil {
		return fmt.Errorf("ip_range_end: %w", err)
	}
	asn, err := strconv.ParseUint(strings.TrimSpace(rec[2]), 10, 32)
	if err != nil {
		return fmt.Errorf("autonomous_system_number %q: not a number in 0..4294967295", rec[2])
	}
	b.rows++
	v := b.value(uint32(asn), rec[3])
	return rangePrefixes(start, end, func(p netip.Prefix) error { return b.insert(p, v) })
}

// value returns the shared record for asn and org.
func (b *builder) value(asn uint32, org string) mmdbtype.Map {
	k := asnKey{asn, org}
	if v, ok := b.values[k]; ok {
		return v
	}
	v := mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(asn)}
	if org != "" {
		v["autonomous_system_organization"] = mmdbtype.String(org)
	}
	b.values[asnKey{asn, strings.Clone(org)}] = v // org aliases the reused CSV record
	return v
}

// insert adds one prefix. A prefix inside a reserved network or inside one of
// the IPv4-aliased IPv6 networks is skipped and counted: GeoLite2 databases
// answer there through the embedded IPv4 address (6to4, Teredo) or not at
// all (private and documentation space), and the writer refuses data there.
// A prefix that merely contains such a network is inserted around it.
func (b *builder) insert(p netip.Prefix, v mmdbtype.Map) error {
	n := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
	err := b.tree.Insert(n, v)
	var reserved *mmdbwriter.ReservedNetworkError
	var aliased *mmdbwriter.AliasedNetworkError
	switch {
	case err == nil:
		b.networks++
		return nil
	case errors.As(err, &reserved), errors.As(err, &aliased):
		b.skipped++
		if len(b.leftOut) < maxLeftOut {
			b.leftOut = append(b.leftOut, fmt.Sprintf("%s (AS%d): %v", p, v["autonomous_system_number"], err))
		}
		return nil
	}
	return fmt.Errorf("inserting %s: %w", p, err)
}
