package bench

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGCSProxyLimitsWritesPerObject: the proxy answers 429 to a write of
// an object written less than a window ago, whatever form the write
// takes (an upload named in the query or in its multipart metadata, a
// delete), forwards everything else, and counts what it saw.
func TestGCSProxyLimitsWritesPerObject(t *testing.T) {
	var forwarded atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		w.Write([]byte("{}"))
	}))
	defer backend.Close()
	p, err := startGCSProxy(backend.URL, time.Millisecond, 0.5, nil) // a write per 2 s per object
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	send := func(method, path, contentType string, body []byte) int {
		t.Helper()
		req, err := http.NewRequest(method, p.addr+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	multipartNamed := func(name string) (string, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		part, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json"}})
		part.Write([]byte(`{"name":"` + name + `"}`))
		part, _ = mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/octet-stream"}})
		part.Write([]byte("body"))
		mw.Close()
		return "multipart/related; boundary=" + mw.Boundary(), b.Bytes()
	}
	upload := "/upload/storage/v1/b/bk/o?uploadType=multipart&name="
	for i, step := range []struct {
		method, path string
		multipart    string // the object the multipart metadata names
		want         int
	}{
		{"POST", upload + "a%2Fhead", "", 200},
		{"POST", upload + "a%2Fhead", "", 429},
		{"POST", upload + "b", "", 200},
		{"GET", "/storage/v1/b/bk/o/a%2Fhead?alt=media", "", 200},
		{"DELETE", "/storage/v1/b/bk/o/a%2Fhead", "", 429},
		{"DELETE", "/storage/v1/b/bk/o/c", "", 200},
		{"POST", "/upload/storage/v1/b/bk/o?uploadType=multipart", "b", 429},
		{"POST", "/upload/storage/v1/b/bk/o?uploadType=multipart", "d", 200},
		{"GET", "/storage/v1/b/bk/o?prefix=a", "", 200},
	} {
		ct, body := "", []byte(nil)
		if step.multipart != "" {
			ct, body = multipartNamed(step.multipart)
		}
		if got := send(step.method, step.path, ct, body); got != step.want {
			t.Errorf("step %d, %s %s (%s): %d, want %d", i, step.method, step.path, step.multipart, got, step.want)
		}
	}
	c := p.counts()
	if c.requests != 9 || c.writes != 7 || c.throttled != 3 || forwarded.Load() != 6 || c.rounds != 9 {
		t.Errorf("counts %+v, %d forwarded; want 9 requests in 9 rounds, 7 writes, 3 throttled, 6 forwarded", c, forwarded.Load())
	}
	if !strings.HasPrefix(p.addr, "http://127.0.0.1:") {
		t.Errorf("proxy at %s", p.addr)
	}
}
