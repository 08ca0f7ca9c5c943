package workbench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkSelectiveSearch: a search whose predicate matches 1% of a
// workbench of 10,000 files (100 directories of 100), answered by the
// scan of every PathCurrent row (scan) and by the index (index). The
// matches lie one in each directory, so the index's recheck reads every
// PathCurrent shard of the workbench, its worst case. warm repeats the
// search on one Service, whose caches hold what it read: ns/op is its CPU
// time. cold opens a new Service over the bucket for each search (the
// first request of a new process, opening included), at 3 ms per request
// so that requests sent together count as one round: ns/op is wall time.
// Reported per search: requests, rounds and bytes read.
//
//	go test ./workbench -run '^$' -bench SelectiveSearch -benchtime 20x
func BenchmarkSelectiveSearch(b *testing.B) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	// The seeding commit folds at once (MaxDeltaBytes 1): the searches
	// meet the steady state, every record in base shards.
	w := newServiceOn(b, wb, workbench.Options{Engine: head.Options{MaxDeltaBytes: 1}})
	const n = 10000
	var files []workbench.SeedFile
	for i := range n {
		f := workbench.SeedFile{Path: fmt.Sprintf("outputs/d%02d/f%04d.txt", i/100, i), ContentType: "text/plain", Body: []byte(fmt.Sprintf("%032d", i))}
		if i%100 == 7 { // 1%, one in each directory: a rare type, and a larger body
			f.ContentType = "application/x-rare"
			f.Body = []byte(fmt.Sprintf("%0128d", i))
		}
		files = append(files, f)
	}
	workbench.SeedFilesForTest(b, w, "wb", files...)
	ctx := context.Background()
	queries := []struct{ name, in string }{
		{"content_type_eq", `{"id":"wb","predicates":[{"field":"content_type","op":"eq","value":"application/x-rare"}],"facets":["logical_size"]}`},
		{"logical_size_gt", `{"id":"wb","predicates":[{"field":"logical_size","op":"gt","value":64}],"facets":["content_type"]}`},
	}
	for _, q := range queries {
		for _, mode := range []string{"scan", "index"} {
			for _, temp := range []string{"warm", "cold"} {
				b.Run(q.name+"/"+mode+"/"+temp, func(b *testing.B) {
					open := func() (*workbench.Service, *counting.Bucket) {
						mb, _ := mem.New(store, "")
						var lb bucket.Bucket = mb
						if temp == "cold" {
							lb = latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond})
						}
						cb := counting.New(lb)
						s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test"})
						if err != nil {
							b.Fatal(err)
						}
						workbench.SetQueryScanOnlyForTest(s, mode == "scan")
						return s, cb
					}
					search := func(s *workbench.Service) {
						m, ok := call(b, s, "workbench_search", q.in)
						if !ok || qNum(m["match_count"]) != "100" {
							b.Fatalf("search: %v", m)
						}
					}
					s, cb := open()
					defer s.Close()
					search(s) // warm the caches, check the result
					var total counting.Stats
					b.ResetTimer()
					for range b.N {
						if temp == "cold" {
							b.StopTimer()
							s.Close()
							s, cb = open()
							b.StartTimer()
						}
						cb.Reset()
						search(s)
						st := cb.Snapshot()
						total.Rounds += st.Rounds
						t := st.Total()
						total.Get.Requests += t.Requests
						total.Get.BytesRead += st.Get.BytesRead
					}
					b.ReportMetric(float64(total.Get.Requests)/float64(b.N), "requests/op")
					b.ReportMetric(float64(total.Rounds)/float64(b.N), "rounds/op")
					b.ReportMetric(float64(total.Get.BytesRead)/float64(b.N), "bytes-read/op")
				})
			}
		}
	}
}
