package gcs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/cairnstore/cairn/bucket/gcs"
	"github.com/cairnstore/cairn/conformance/fakegcs"
	"google.golang.org/api/option"
)

// recorder is an http.RoundTripper in front of the fake that records every
// request and lets a test answer some itself (hook returns a nil response
// and nil error to pass a request through).
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []string // "METHOD kind" per request
	hook func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error)
}

// kind names the API call a request makes.
func kind(req *http.Request) string {
	p := req.URL.Path
	switch {
	case strings.HasPrefix(p, "/upload/"):
		return "upload"
	case req.Method == http.MethodDelete:
		return "delete"
	case req.URL.Query().Get("alt") == "media" || strings.HasPrefix(p, "/download/"):
		return "media"
	case strings.HasSuffix(p, "/o") || strings.HasSuffix(p, "/o/"):
		return "list"
	case strings.Contains(p, "/o/"):
		return "stat"
	}
	return "other"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, kind(req))
	hook := r.hook
	r.mu.Unlock()
	forward := func() (*http.Response, error) { return r.base.RoundTrip(req) }
	if hook != nil {
		if resp, err := hook(req, forward); resp != nil || err != nil {
			return resp, err
		}
	}
	return forward()
}

// count returns how many requests of kind k were made.
func (r *recorder) count(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.reqs {
		if x == k {
			n++
		}
	}
	return n
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *recorder) setHook(h func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error)) {
	r.mu.Lock()
	r.hook = h
	r.mu.Unlock()
}

// answer is a JSON error response as GCS sends it.
func answer(req *http.Request, code int) *http.Response {
	body := fmt.Sprintf(`{"error":{"code":%d,"message":"injected %d"}}`, code, code)
	return &http.Response{
		StatusCode:    code,
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// jsonAnswer is a 200 response with a JSON body.
func jsonAnswer(req *http.Request, v any) (*http.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Status:        "200 OK",
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}, nil
}

// client returns a storage client for srv whose requests go through rt.
func client(t testing.TB, srv *fakegcs.Server, rt http.RoundTripper) *storage.Client {
	t.Helper()
	c, err := storage.NewClient(context.Background(),
		option.WithEndpoint(srv.URL()+"/storage/v1/"),
		option.WithHTTPClient(&http.Client{Transport: rt}),
		storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newRecorded returns a fresh bucket on srv whose requests r records.
func newRecorded(t testing.TB, srv *fakegcs.Server, name, prefix string, opts gcs.Options) (*gcs.Bucket, *recorder) {
	t.Helper()
	if err := srv.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
	r := &recorder{base: http.DefaultTransport}
	b, err := gcs.New(client(t, srv, r), name, prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

// gcsSemantics makes the fake behave as GCS where it does not: it honours
// ifGenerationMatch on delete, and it pages listings as GCS does
// (maxResults counts objects and prefixes together, startOffset filters
// objects before they are folded, one page continues where the last one
// stopped). With it, the adapter's code for real GCS runs against the
// fake.
func gcsSemantics(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
	switch kind(req) {
	case "delete":
		return conditionalDelete(req)
	case "list":
		return gcsList(req)
	}
	return nil, nil
}

func conditionalDelete(req *http.Request) (*http.Response, error) {
	want := req.URL.Query().Get("ifGenerationMatch")
	if want == "" {
		return nil, nil
	}
	stat := req.Clone(req.Context())
	stat.Method = http.MethodGet
	stat.URL.RawQuery = ""
	resp, err := http.DefaultTransport.RoundTrip(stat)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answer(req, resp.StatusCode), nil
	}
	var obj struct {
		Generation string `json:"generation"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return nil, err
	}
	if obj.Generation != want {
		return answer(req, http.StatusPreconditionFailed), nil
	}
	return nil, nil
}

func gcsList(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	start := q.Get("startOffset")
	if tok := q.Get("pageToken"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return answer(req, http.StatusBadRequest), nil
		}
		start = string(b)
	}
	limit := 1000
	if s := q.Get("maxResults"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return answer(req, http.StatusBadRequest), nil
		}
		limit = min(n, 1000)
	}

	// Every object under prefix, flat, in one page.
	all := req.Clone(req.Context())
	all.URL.RawQuery = url.Values{"prefix": {prefix}, "projection": {"noAcl"}}.Encode()
	resp, err := http.DefaultTransport.RoundTrip(all)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answer(req, resp.StatusCode), nil
	}
	var flat struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&flat); err != nil {
		return nil, err
	}
	type item struct {
		name string
		raw  json.RawMessage
	}
	var items []item
	for _, raw := range flat.Items {
		var o struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, err
		}
		if o.Name >= start {
			items = append(items, item{o.Name, raw})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })

	out := struct {
		Kind          string            `json:"kind"`
		Items         []json.RawMessage `json:"items,omitempty"`
		Prefixes      []string          `json:"prefixes,omitempty"`
		NextPageToken string            `json:"nextPageToken,omitempty"`
	}{Kind: "storage#objects"}
	entries, lastPrefix := 0, ""
	for _, it := range items {
		p := ""
		if rest := it.name[len(prefix):]; delim != "" {
			if i := strings.Index(rest, delim); i >= 0 {
				p = prefix + rest[:i+len(delim)]
			}
		}
		if p != "" && p == lastPrefix {
			continue
		}
		if entries == limit {
			out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(it.name))
			break
		}
		entries++
		if p != "" {
			out.Prefixes = append(out.Prefixes, p)
			lastPrefix = p
		} else {
			out.Items = append(out.Items, it.raw)
		}
	}
	return jsonAnswer(req, out)
}
