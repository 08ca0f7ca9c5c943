package workbench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// TestGrepRequestCounts: a grep over 200 small files, each in one block
// object (InlineMax -1), fetches their manifest rows and first blocks
// together, bounded by bytes in flight rather than a few bodies at a
// time; run again, it finds the blocks in the cache of small blocks and
// costs the head read only. At 20 ms per request, so that requests sent
// together count as one round.
func TestGrepRequestCounts(t *testing.T) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	opts := workbench.Options{InlineMax: -1}
	// The seeding commit folds at once (MaxDeltaBytes 1), so the reader
	// below meets the steady state and no background fold races it.
	seedOpts := opts
	seedOpts.Engine.MaxDeltaBytes = 1
	w := newServiceOn(t, wb, seedOpts)
	var files []workbench.SeedFile
	for i := range 200 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/g/f%03d.txt", i), Body: fmt.Appendf(nil, "line one\nneedle %d\n", i)})
	}
	workbench.SeedFilesForTest(t, w, "wb", files...)

	ctx := context.Background()
	mb, _ := mem.New(store, "")
	cb := counting.New(latency.New(mb, latency.Options{PerRequest: 20 * time.Millisecond}))
	opts.AgentID = "test"
	s, err := workbench.Open(ctx, cb, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const in = `{"id":"wb","section":"outputs","path":"g","pattern":"needle","recursive":true,"limit":300}`
	grep := func(what string) counting.Stats {
		t.Helper()
		cb.Reset()
		r := mustCall(t, s, "workbench_grep", in)
		st := cb.Snapshot()
		t.Logf("%s grep over 200 one-block files: %d requests in %d rounds (%d in flight at most), %d bytes read",
			what, st.Total().Requests, st.Rounds, st.MaxInFlight, st.Get.BytesRead)
		if n := len(r["matches"].([]any)); n != 200 || fmt.Sprint(r["files_scanned"]) != "200" {
			t.Fatalf("%s: %d matches, %v files scanned", what, n, r["files_scanned"])
		}
		return st
	}
	cold := grep("cold")
	// The head, the root, the tables (the manifest's with the path
	// families'), the marker's and the path shards, then every manifest
	// shard and first block in one round: 4 rounds. The directory's
	// path_current shard (200 entries, about 60 KB) is over the page
	// bound, so its page index costs one more; the bound leaves one
	// round to the engine's schema gate, whose system shard is fetched
	// beside the first reads and now and then lands in a round of its
	// own. The rounds show that the bodies were fetched together; the
	// requests in flight say so too, but how many overlap depends on the
	// scheduler of a loaded machine (the race detector's runs have seen
	// 92), so their bound is loose.
	if cold.Rounds > 6 || cold.Total().Requests > 2*200+20 || cold.MaxInFlight < 50 {
		t.Errorf("cold grep: %d requests in %d rounds, %d in flight at most; want at most %d in 6, at least 50 at once",
			cold.Total().Requests, cold.Rounds, cold.MaxInFlight, 2*200+20)
	}
	warm := grep("warm")
	if warm.Total().Requests != 1 {
		t.Errorf("warm grep: %d requests, want 1 (the head)", warm.Total().Requests)
	}
}
