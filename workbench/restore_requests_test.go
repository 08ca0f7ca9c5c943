package workbench_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// TestRestoreRequestCounts restores a committed workbench of 1,000 files
// in a new process, at 1 ms per request, once with bodies of 100 bytes
// and once of 32 KiB: revisions are shared, never copied, so the bytes a
// restore writes do not grow with the bodies.
func TestRestoreRequestCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 2,000 files")
	}
	written := map[int]int64{}
	for _, size := range []int{100, 32 << 10} {
		store := mem.NewStore()
		wb, _ := mem.New(store, "")
		w := newServiceOn(t, wb, workbench.Options{})
		var files []workbench.SeedFile
		for i := range 1000 {
			files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/d%02d/f%04d.bin", i%10, i), Body: bytes.Repeat([]byte{byte(i)}, size)})
		}
		workbench.SeedFilesForTest(t, w, "src", files...)
		commit := mustCall(t, w, "workbench_commit", commitInput("src", `{"n":1000}`, digestAA))["commit_identity"].(string)

		mb, _ := mem.New(store, "")
		cb := counting.New(latency.New(mb, latency.Options{PerRequest: time.Millisecond}))
		// Without the engine's strict check after each commit, which
		// reads the whole store: a deployment's own cost.
		s, err := workbench.Open(t.Context(), cb, workbench.Options{AgentID: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		cb.Reset()
		workbench.SetRestoreHookForTest(s, func(step string) error {
			st := cb.Snapshot()
			t.Logf("  after %s: %d GETs %d PUTs %d rounds", step, st.Get.Requests, st.Put.Requests, st.Rounds)
			return nil
		})
		res := mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
		st := cb.Snapshot()
		t.Logf("restore of 1,000 files of %d bytes, new process: %d requests (%d GETs, %d PUTs, %d deletes, %d lists) in %d rounds; %d bytes written, %d read",
			size, st.Total().Requests, st.Get.Requests, st.Put.Requests, st.Delete.Requests, st.List.Requests, st.Rounds, st.Put.BytesWritten, st.Get.BytesRead)
		if res["state"] != "complete" {
			t.Fatalf("%v", res)
		}
		written[size] = st.Put.BytesWritten
		// Six commands (prepare, four batches of 256, final); their
		// reads are named ahead, so the rounds are a few per command.
		if st.Rounds > 80 {
			t.Errorf("%d rounds for 1,000 files, want at most 80", st.Rounds)
		}
		// What is restored is readable.
		if got := readText(t, s, "dst", "outputs/d03/f0003.bin"); got != string(bytes.Repeat([]byte{3}, size)) {
			t.Fatalf("restored body of %d bytes differs", len(got))
		}
	}
	// The engine's folds vary from run to run by a megabyte or two; the
	// 32 MiB of bodies would show far above that.
	small, large := written[100], written[32<<10]
	if large > small*3/2 || large > 12<<20 {
		t.Errorf("bytes written grew with the bodies: %d for 100-byte bodies, %d for 32 KiB", small, large)
	}
}
