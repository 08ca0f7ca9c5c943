package gcsweep_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkReclamation measures what a sweep reclaims after a burst of
// contended writes: 16 replicas, each its own Service over one local-file
// bucket, put small files (one in eight of 8 KiB, in blocks; the others
// inline) as fast as they can, then, three seconds later, one sweep runs
// as cairn gc --grace 2s does (the least grace, recorded, and a touch of
// the head). It prints the bucket before and after, the live
// graph (Walk from the head) and the sweep's cost. It runs once whatever
// b.N is:
//
//	go test ./gcsweep -run '^$' -bench Reclamation -benchtime 1x -v
func BenchmarkReclamation(b *testing.B) {
	const writers, putsEach = 16, 80
	ctx := context.Background()
	dir := b.TempDir()
	open := func() bucket.Bucket {
		fb, err := file.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		return fb
	}
	services := make([]*workbench.Service, writers)
	for i := range services {
		services[i] = openService(b, open(), workbench.Options{AgentID: "reclaim"})
	}
	layout := services[0].Store().Layout()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked, failed := 0, 0
	for w, s := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range putsEach {
				size := 200
				if i%8 == 7 {
					size = 8 << 10
				}
				in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"w%02d/f%03d.txt","text":%q}`, w, i, body(w*1000+i, size))
				_, ok := s.Call(ctx, "workbench_put_file", []byte(in))
				mu.Lock()
				if ok {
					acked++
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	writing := time.Since(start)
	for _, s := range services {
		s.Close()
	}
	raw := open()
	seq := sequenceOf(b, raw, layout)
	before := tallyBucket(b, raw)
	var live gcsweep.Tally
	if err := walk.Walk(ctx, raw, layout, headRoot(b, raw, layout), workbench.BlockRefs,
		walk.Options{RefFamilies: workbench.BlockRefFamilies}, func(o walk.Object) error {
			live.Objects++
			live.Bytes += o.Size
			return nil
		}); err != nil {
		b.Fatal(err)
	}

	time.Sleep(3 * time.Second) // the local files' times are the store's clock
	b.ResetTimer()
	opts := workbench.SweepOptions()
	opts.Grace, opts.SetGrace = head.MinGrace, true
	rep, err := gcsweep.Sweep(ctx, raw, layout, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	after := tallyBucket(b, raw)

	b.Logf("writes: %d writers × %d puts: %d acknowledged, %d failed, %d commits (head sequence) in %v",
		writers, putsEach, acked, failed, seq, writing.Round(time.Millisecond))
	b.Logf("before: %d objects, %d bytes", before.Objects, before.Bytes)
	for _, row := range rep.ByClass {
		b.Logf("  %-8s %6d objects %10d bytes; deleted %6d (%d bytes)", row.Class, row.Scanned.Objects, row.Scanned.Bytes, row.Deleted.Objects, row.Deleted.Bytes)
	}
	b.Logf("live graph (walk from the head): %d objects, %d bytes", live.Objects, live.Bytes)
	b.Logf("after: %d objects, %d bytes (%.1f× fewer objects, %.1f× fewer bytes)",
		after.Objects, after.Bytes, float64(before.Objects)/float64(after.Objects), float64(before.Bytes)/float64(after.Bytes))
	b.Logf("sweep: %d requests in %v; kept %d reachable, %d since the horizon, %d unknown",
		rep.Requests, time.Duration(rep.Duration).Round(time.Millisecond), rep.Reachable.Objects, rep.Young.Objects, rep.Unknown.Objects)
	// The live graph, the head, and what the sweep's own commits wrote:
	// the grace's root and its delta segment, the touch's root.
	if after.Objects != live.Objects+4 {
		b.Errorf("after the sweep %d objects, the live graph %d, the head, two roots and a delta", after.Objects, live.Objects)
	}
}

// tallyBucket counts every object in b.
func tallyBucket(tb testing.TB, b bucket.Bucket) gcsweep.Tally {
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
