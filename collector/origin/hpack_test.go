package origin

import (
	"bytes"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHPACKWithoutDynamicTable reads the HTTP/2 origin's response header
// blocks off the wire: the first opens by shrinking the dynamic table to
// hold nothing (hpackEncoderTable), and a second probe response on the
// same connection is as long as the first, its constant headers literals
// again rather than one-byte references to the first's.
func TestHPACKWithoutDynamicTable(t *testing.T) {
	ts := startServer(t, &Server{})
	_, h2 := ts.Addrs()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", h2.String(),
		&tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var req bytes.Buffer
	enc := hpack.NewEncoder(&req)
	dec := hpack.NewDecoder(4096, nil)
	var blocks [][]byte
	var headers []map[string]string
	for _, stream := range []uint32{1, 3} {
		req.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"},
			{":path", "/probe"}, {"origin", "https://site.example"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: req.Bytes(),
			EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("stream %d: %v", stream, err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
				continue
			case *http2.HeadersFrame:
				if !f.HeadersEnded() {
					t.Fatal("response headers in CONTINUATION frames")
				}
				block := bytes.Clone(f.HeaderBlockFragment())
				fields, err := dec.DecodeFull(block)
				if err != nil {
					t.Fatalf("stream %d: decoding headers: %v", stream, err)
				}
				h := map[string]string{}
				for _, hf := range fields {
					h[hf.Name] = hf.Value
				}
				blocks, headers = append(blocks, block), append(headers, h)
			default:
				continue
			}
			break
		}
	}
	for i, h := range headers {
		if h[":status"] != "204" || h["cache-control"] != "no-store" || !strings.Contains(h["server-timing"], "proto;desc=h2") {
			t.Fatalf("response %d: headers %v", i+1, h)
		}
	}
	// A dynamic table size update (001xxxxx) to 1 byte: 0x21.
	if blocks[0][0] != 0x21 {
		t.Errorf("first header block starts with %#x, want a table size update to 1 (0x21)", blocks[0][0])
	}
	// The second block lacks only that update byte; with a table, its
	// constant headers would shrink to a byte each.
	if len(blocks[1]) < len(blocks[0])-8 {
		t.Errorf("second header block is %d bytes, the first %d: the second refers to entries the first indexed", len(blocks[1]), len(blocks[0]))
	}
}
