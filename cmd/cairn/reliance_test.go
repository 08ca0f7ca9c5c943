package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// The scheme counted://NAME opens one counting bucket per NAME over a
// memory store that answers every listing in pages of two, so that what
// cairn's commands ask of a store can be read off them: code that read
// one page only would miss objects, and code that pages shows it.
var (
	countedMu sync.Mutex
	counted   = map[string]*counting.Bucket{}
)

func init() {
	bucket.Register("counted", func(_ context.Context, u *url.URL) (bucket.Bucket, error) {
		countedMu.Lock()
		defer countedMu.Unlock()
		b := counted[u.Host]
		if b == nil {
			m, err := mem.New(mem.NewStore(), "")
			if err != nil {
				return nil, err
			}
			b = counting.New(smallPages{m})
			counted[u.Host] = b
		}
		return b, nil
	})
}

// smallPages lists at most two entries a page, as a store may.
type smallPages struct{ bucket.Bucket }

func (s smallPages) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if opts.PageSize <= 0 || opts.PageSize > 2 {
		opts.PageSize = 2
	}
	return s.Bucket.List(ctx, opts)
}

// cancelOnBlock cancels cancel when the first block of a body is
// written: the rest of the call runs with its context ended.
type cancelOnBlock struct {
	bucket.Bucket
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnBlock) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if strings.Contains(key, "/blocks/") {
		c.once.Do(c.cancel)
	}
	return c.Bucket.Put(ctx, key, body, cond)
}

// TestConformanceTableMatchesUse runs what cairn does with a store (the
// Workbench tools, two replicas sharing a head through intents, the HTTP
// server's idempotency records, every pin verb, gc with and without
// --revisions and over every agent, a sweep that deletes, fsck, the
// change feed, a call cancelled halfway) over counting buckets, and
// checks the conformance table against the kinds of request it saw:
// every check whose Uses were made is ReliedOn, and no other is.
func TestConformanceTableMatchesUse(t *testing.T) {
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	src := fmt.Sprintf("counted://rely-%d", stamp)
	dst := fmt.Sprintf("counted://rely-copy-%d", stamp)
	const agent = "rely"
	cli := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := runWith(t, stdin, args...)
		if code != exitOK {
			t.Fatalf("cairn %s: exit %d: %s %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	tool := func(name, input string) string {
		t.Helper()
		return cli(input, "workbench", "--bucket", src, "--agent", agent, name)
	}
	tool("workbench_create", `{"id":"wb"}`)
	tool("workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"one\ntwo\n"}`)
	big := strings.Repeat("a line of a long report\n", (5<<20)/24) // over the 4 MiB block
	tool("workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"big.txt","text":%q}`, big))
	tool("workbench_append", `{"id":"wb","section":"outputs","path":"a.txt","text":"three\n"}`)
	tool("workbench_edit", `{"id":"wb","section":"outputs","path":"a.txt","old_string":"two","new_string":"2"}`)
	tool("workbench_read", `{"id":"wb","section":"outputs","path":"a.txt"}`)
	tool("workbench_list", `{"id":"wb","section":"outputs"}`)
	tool("workbench_stat", `{"id":"wb","section":"outputs","path":"big.txt"}`)
	tool("workbench_grep", `{"id":"wb","section":"outputs","pattern":"three","recursive":true}`)
	tool("workbench_commit", `{"id":"wb","manifest":{"run":1},"content_digest_uri":"sha256:`+strings.Repeat("ab", 32)+`"}`)
	snap := decodeLine(t, tool("workbench_snapshot", `{"id":"wb","name":"first"}`))["snapshot_id"]
	tool("workbench_snapshot_list", `{"id":"wb"}`)
	tool("workbench_restore", fmt.Sprintf(`{"id":"wb","destination_id":"wb2","at_snapshot":%v}`, snap))
	cli("", "changes", "--bucket", src, "--agent", agent, "--workbench", "wb")
	cli("", "fsck", "--bucket", src, "--agent", agent)

	// Two replicas of the agent's shard sharing its head: intents.
	replicas(t, ctx, src, agent)

	// The HTTP server's idempotency records: a keyed call and its replay.
	b, err := bucket.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(b, serve.Options{})
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/"+agent+"/tools/workbench_put_file",
			strings.NewReader(`{"id":"wb","section":"outputs","path":"keyed.txt","text":"k"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k1")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("keyed call: %d %s", rec.Code, rec.Body)
		}
	}
	srv.Close()

	// A call whose caller gives up halfway through its body's upload.
	cctx, cancel := context.WithCancel(ctx)
	cb := &cancelOnBlock{Bucket: b, cancel: cancel}
	svc, err := workbench.Open(ctx, cb, workbench.Options{AgentID: agent, BlockSize: 64, InlineMax: 32})
	if err != nil {
		t.Fatal(err)
	}
	svc.Call(cctx, "workbench_put_file", []byte(fmt.Sprintf(`{"id":"wb","section":"outputs","path":"gave-up.txt","text":%q}`, strings.Repeat("x", 64*40))))
	svc.Close()

	// Pins, every verb.
	cli("", "pin", "create", "--bucket", src, "--agent", agent, "--name", "p1")
	cli("", "pin", "list", "--bucket", src, "--agent", agent)
	cli("", "pin", "show", "p1", "--bucket", src, "--agent", agent)
	cli("", "pin", "verify", "p1", "--bucket", src, "--agent", agent)
	cli("", "pin", "copy", "p1", "--bucket", src, "--agent", agent, "--to", dst, "--quiet")
	tool("workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"replaced\n","replace":true}`)
	cli("", "pin", "restore", "p1", "--bucket", src, "--agent", agent)
	cli("", "pin", "delete", "p1", "--bucket", src, "--agent", agent)

	// gc: a dry run, every agent, the collection of revisions; then a
	// sweep with the least grace, a moment later, so that it deletes.
	cli("", "gc", "--bucket", src, "--agent", agent, "--dry-run")
	cli("", "gc", "--bucket", src, "--all-agents")
	cli("", "gc", "--bucket", src, "--agent", agent, "--revisions")
	layout, err := workbench.Layout(agent)
	if err != nil {
		t.Fatal(err)
	}
	// The least grace, recorded, three seconds after the last write: the
	// sweep's horizon (its touch's store time less the grace) passes
	// what those writes left behind.
	time.Sleep(3 * time.Second)
	opts := workbench.SweepOptions()
	opts.Grace, opts.SetGrace = head.MinGrace, true
	rep, err := gcsweep.Sweep(ctx, b, layout, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted.Objects == 0 {
		t.Fatalf("the sweep an hour ahead deleted nothing: %+v", rep)
	}

	// What was asked of the stores.
	used := map[string]int64{}
	for _, name := range []string{src, dst} {
		u, _ := url.Parse(name)
		countedMu.Lock()
		cb := counted[u.Host]
		countedMu.Unlock()
		for k, n := range cb.Kinds() {
			used[string(k)] += n
		}
		if keyAndPrefix(t, cb) {
			used["key-and-prefix"]++
		}
	}
	var kinds []string
	for _, k := range counting.Kinds {
		kinds = append(kinds, string(k))
	}
	t.Logf("kinds of request made: %v", used)

	caps := b.Capabilities() // a memory store: conditional deletes declared
	for _, c := range conformance.BucketChecks() {
		made := false
		for _, u := range c.Uses {
			if !slices.Contains(kinds, u) && u != "key-and-prefix" {
				t.Errorf("check %s names %q, which is no kind of request", c.Name, u)
			}
			made = made || used[u] > 0
		}
		relied := c.Relied(caps)
		switch {
		case len(c.Uses) == 0 && relied:
			t.Errorf("check %s is relied on but names no kind of request that shows it", c.Name)
		case made && !relied:
			t.Errorf("check %s: cairn makes %v, so it relies on it, but the table says it does not (%s)", c.Name, c.Uses, c.Why)
		case !made && relied:
			t.Errorf("check %s: the table says cairn relies on it, but none of %v was made (%s)", c.Name, c.Uses, c.Why)
		}
	}
}

// replicas runs two Services of agent over url at once until their
// shared head has made one of them publish an intent.
func replicas(t *testing.T, ctx context.Context, url, agent string) {
	t.Helper()
	b, err := bucket.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var svcs []*workbench.Service
	for range 2 {
		s, err := workbench.Open(ctx, b, workbench.Options{AgentID: agent})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		svcs = append(svcs, s)
	}
	for round := range 50 {
		var wg sync.WaitGroup
		for i, s := range svcs {
			for j := range 4 {
				wg.Go(func() {
					s.Call(ctx, "workbench_put_file", []byte(fmt.Sprintf(`{"id":"wb","section":"outputs","path":"r/%d-%d-%d.txt","text":"x"}`, round, i, j)))
				})
			}
		}
		wg.Wait()
		for _, s := range svcs {
			if published, _ := s.Store().IntentStats(); published > 0 {
				return
			}
		}
	}
	t.Fatal("two replicas writing at once published no intent in 50 rounds")
}

// keyAndPrefix reports whether b holds a key that is also the directory
// of another key.
func keyAndPrefix(t *testing.T, b bucket.Bucket) bool {
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, o := range objs {
		keys[o.Key] = true
	}
	for k := range keys {
		if strings.HasSuffix(k, "/") {
			return true
		}
		for i := range len(k) {
			if k[i] == '/' && keys[k[:i]] {
				return true
			}
		}
	}
	return false
}
