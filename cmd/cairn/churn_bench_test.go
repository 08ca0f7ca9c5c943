package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkChurnReclamation measures what one `cairn gc` reclaims from a
// churned store: 200 rounds in which 50 files of 4 KiB are all replaced
// (each round's puts sent together, so that they share group commits),
// then the store's clock moves two hours on (past the default grace of
// an hour) and `cairn gc --agent churn` runs: a sweep, then the
// collection of the replaced revisions. A second gc two hours later
// reclaims what the grace period kept through the first (the state just
// before the collection's commits, which requests may still read). It
// prints the bucket before and after each, the live graph (what the
// head's root reaches, blocks included), and the time taken. It runs once
// whatever b.N is:
//
//	go test ./cmd/cairn -run '^$' -bench ChurnReclamation -benchtime 1x -v
//
// CAIRN_CHURN_INLINE_MAX sets the Workbench's InlineMax for the writes
// (default: the Workbench's own, 4 KiB, which keeps 4 KiB bodies inline in
// their manifest rows; 1024 puts them in blocks). CAIRN_CHURN_FILE=1 runs
// on a local-file bucket in a temporary directory instead of in memory.
func BenchmarkChurnReclamation(b *testing.B) {
	const rounds, files, size = 200, 50, 4 << 10
	ctx := context.Background()
	url, clock := newClockMem(b, "churn")
	if os.Getenv("CAIRN_CHURN_FILE") != "" {
		url, clock = newClocked(b, fmt.Sprintf("churn-file-%d", time.Now().UnixNano()), "file://"+b.TempDir())
	}
	raw, err := bucket.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	opts := workbench.Options{AgentID: "churn"}
	if v := envInt(b, "CAIRN_CHURN_INLINE_MAX"); v > 0 {
		opts.InlineMax = v
	}
	s, err := workbench.Open(ctx, raw, opts)
	if err != nil {
		b.Fatal(err)
	}
	layout := s.Store().Layout()
	start := time.Now()
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make([]string, files)
		for f := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"f%02d.txt","text":%q,"replace":%t}`, f, churnBody(r, f, size), r > 0)
				if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
					errs[f] = string(out)
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				b.Fatalf("round %d: %s", r, e)
			}
		}
	}
	writing := time.Since(start)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	sn, err := headOf(ctx, raw, layout)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("writes: %d rounds × %d files × %d bytes, %d commits (head sequence) in %v", rounds, files, size, sn, writing.Round(time.Millisecond))
	report := func(when string) gcsweep.Tally {
		t := tallyObjects(b, raw)
		live := liveGraph(b, raw, "churn")
		b.Logf("%s: %d objects, %d bytes; live graph %d objects, %d bytes (%.1f× its bytes)",
			when, t.Objects, t.Bytes, live.Objects, live.Bytes, float64(t.Bytes)/float64(live.Bytes))
		return t
	}
	report("before")

	b.ResetTimer()
	for i, when := range []string{"after one gc", "after a second gc, two hours later"} {
		clock.Advance(2 * time.Hour)
		var out, errOut bytes.Buffer
		gcStart := time.Now()
		code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, []string{"gc", "--bucket", url, "--agent", "churn"})
		took := time.Since(gcStart)
		if code != exitOK {
			b.Fatalf("gc %d: exit %d\n%s%s", i+1, code, out.String(), errOut.String())
		}
		b.Logf("gc %d in %v:\n%s", i+1, took.Round(time.Millisecond), out.String())
		report(when)
	}
	b.StopTimer()
	b.Logf("what the head holds, by family:\n%s", familySizes(b, raw, "churn"))
}

// familySizes lists the records of every non-empty family at the head,
// with the bytes of their keys and values.
func familySizes(tb testing.TB, b bucket.Bucket, agent string) string {
	tb.Helper()
	ctx := context.Background()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: agent})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	sc := s.Store().Schema().Families
	var sb strings.Builder
	for _, f := range sc.Families() {
		recs, err := sn.Scan(ctx, f, nil, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if len(recs) == 0 {
			continue
		}
		var n int
		for _, r := range recs {
			n += len(r.Key) + len(r.Value)
		}
		fmt.Fprintf(&sb, "  %-28s %6d records %9d bytes\n", sc.Name(f), len(recs), n)
	}
	return sb.String()
}

// churnBody is the body of file f in round r: size bytes, distinct.
func churnBody(r, f, size int) string {
	head := fmt.Sprintf("round %d file %d\n", r, f)
	return head + strings.Repeat("x", size-len(head))
}

func envInt(tb testing.TB, name string) int {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return 0
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil {
		tb.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// headOf returns the head's sequence.
func headOf(ctx context.Context, b bucket.Bucket, layout shards.Layout) (uint64, error) {
	h, _, err := head.ReadHead(ctx, b, layout, head.Marker{})
	if err != nil {
		return 0, err
	}
	return h.Sequence, nil
}

// tallyObjects counts every object in b.
func tallyObjects(tb testing.TB, b bucket.Bucket) gcsweep.Tally {
	tb.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	var t gcsweep.Tally
	for _, o := range objs {
		t.Objects++
		t.Bytes += o.Size
	}
	return t
}

// liveGraph is what the head's root reaches (and the roots its holds
// name), the blocks of every manifest row included, and the head.
func liveGraph(tb testing.TB, b bucket.Bucket, agent string) gcsweep.Tally {
	tb.Helper()
	ctx := context.Background()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: agent})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	hb, _, err := b.Get(ctx, s.Store().Layout().Head())
	if err != nil {
		tb.Fatal(err)
	}
	t := gcsweep.Tally{Objects: 1, Bytes: int64(len(hb))}
	err = walk.Walk(ctx, b, s.Store().Layout(), sn.RootHash(), workbench.BlockRefs, walk.Options{}, func(o walk.Object) error {
		t.Objects++
		t.Bytes += o.Size
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
