package workbench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// TestWriteRequestCounts: what each write tool costs a warm Service, in
// the order of docs/workbench.md's table. A commit stages one delta
// segment and the root, then writes the head; a body in blocks adds the
// ledger beside its blocks. Requests sent together overlap at 10 ms each
// and count as one round.
func TestWriteRequestCounts(t *testing.T) {
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 10 * time.Millisecond}))
	// Without the engine's strict Check after every commit, which reads
	// the whole store.
	s, err := workbench.Open(context.Background(), cb, workbench.Options{AgentID: "test", BlockSize: 8, BlockCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCall(t, s, "workbench_create", `{"id":"warm"}`)
	mustCall(t, s, "workbench_put_file", `{"id":"warm","section":"outputs","path":"w.txt","text":"w"}`)
	seven := strings.Repeat("0123456789abcdef\n", 3) // 51 bytes: 7 blocks of 8
	three := "aaaaaaaa" + "bbbbbbbb" + "cccc"        // 3 blocks
	for _, tc := range []struct {
		what, tool, input string
		ok                bool
		gets, puts        int64
		rounds            int64
	}{
		{"create, new workbench", "workbench_create", `{"id":"wb"}`, true, 2, 3, 4},
		{"create, existing workbench", "workbench_create", `{"id":"wb"}`, true, 1, 0, 1},
		{"put_file, new path, small body (inline)", "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"hi"}`, true, 1, 3, 3},
		{"put_file, new 7-block path", "workbench_put_file", `{"id":"wb","section":"outputs","path":"b.txt","text":` + quote(seven) + `}`, true, 1, 11, 4},
		{"put_file replace, small body (inline)", "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"ho","replace":true}`, true, 1, 3, 3},
		{"put_file refused AlreadyExists", "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"x"}`, false, 1, 0, 1},
		{"append of a small delta (inline)", "workbench_append", `{"id":"wb","section":"outputs","path":"a.txt","text":"!"}`, true, 1, 3, 3},
		{"put_file, new 3-block path", "workbench_put_file", `{"id":"wb","section":"outputs","path":"c.txt","text":` + quote(three) + `}`, true, 1, 7, 4},
		{"edit of a 3-block file (the result in 3 blocks)", "workbench_edit", `{"id":"wb","section":"outputs","path":"c.txt","old_string":"bbbbbbbb","new_string":"BBBBBBBB"}`, true, 4, 7, 5},
		{"edit with identical result", "workbench_edit", `{"id":"wb","section":"outputs","path":"c.txt","old_string":"BBBBBBBB","new_string":"BBBBBBBB"}`, true, 4, 0, 2},
	} {
		cb.Reset()
		r, ok := call(t, s, tc.tool, tc.input)
		if ok != tc.ok {
			t.Fatalf("%s: %v", tc.what, r)
		}
		st := cb.Snapshot()
		t.Logf("%s: %d GETs, %d PUTs, %d DELETEs in %d rounds", tc.what, st.Get.Requests, st.Put.Requests, st.Delete.Requests, st.Rounds)
		if st.Get.Requests != tc.gets || st.Put.Requests != tc.puts || st.Delete.Requests != 0 || st.Rounds > tc.rounds {
			t.Errorf("%s: %d GETs, %d PUTs, %d DELETEs in %d rounds; want %d GETs, %d PUTs, no DELETE, at most %d rounds",
				tc.what, st.Get.Requests, st.Put.Requests, st.Delete.Requests, st.Rounds, tc.gets, tc.puts, tc.rounds)
		}
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"` }
