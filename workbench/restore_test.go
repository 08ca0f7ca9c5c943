package workbench_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

const digestAA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// restoreSource writes n files to workbench id and commits it; it returns
// the commit's identity.
func restoreSource(t *testing.T, s *workbench.Service, id string, n int) string {
	t.Helper()
	for i := range n {
		putText(t, s, id, fmt.Sprintf("dir%d/f%03d.txt", i%3, i), fmt.Sprintf("body %d", i))
	}
	res := mustCall(t, s, "workbench_commit", commitInput(id, `{"task":"restore-test"}`, digestAA))
	return res["commit_identity"].(string)
}

// checkRestored checks that workbench dst holds the n files
// restoreSource wrote, and that s's references and commits are whole.
func checkRestored(t *testing.T, s *workbench.Service, dst string, n int) {
	t.Helper()
	for i := range n {
		if got, want := readText(t, s, dst, fmt.Sprintf("outputs/dir%d/f%03d.txt", i%3, i)), fmt.Sprintf("body %d", i); got != want {
			t.Fatalf("file %d: %q, want %q", i, got, want)
		}
	}
	workbench.CheckReferencesForTest(t, s)
	workbench.CheckCommitClosureForTest(t, s)
}

func mintSnapshot(t *testing.T, s *workbench.Service, id string) uint64 {
	t.Helper()
	res := mustCall(t, s, "workbench_snapshot", fmt.Sprintf(`{"id":%q}`, id))
	n, err := res["snapshot_id"].(json.Number).Int64()
	if err != nil {
		// Ids above 2^63 do not fit an int64; go through the text.
		var u uint64
		fmt.Sscan(res["snapshot_id"].(json.Number).String(), &u)
		return u
	}
	return uint64(n)
}

func restoreIn(src, dst, sel string) string {
	return fmt.Sprintf(`{"id":%q,"destination_id":%q,%s}`, src, dst, sel)
}

// treeOf lists every file of workbench id with its body, through the
// read tools.
func treeOf(t *testing.T, s *workbench.Service, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range searchAll(t, s, fmt.Sprintf(`"id":%q`, id)) {
		rel := m["path"].(string)
		rel = strings.TrimPrefix(rel, "/agents/test/wb/"+id+"/")
		sec, path, _ := strings.Cut(rel, "/")
		r := mustCall(t, s, "workbench_read", fmt.Sprintf(`{"id":%q,"section":%q,"path":%q}`, id, sec, path))
		b, _ := json.Marshal(r["records"])
		out[rel] = string(b)
	}
	return out
}

// searchAll pages through a search with the given members (without
// braces) and returns every match. A continuation whose fence moved (a
// background fold commits too) restarts the whole search.
func searchAll(t *testing.T, s *workbench.Service, members string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for tries := 0; ; {
		in := "{" + members + `,"limit":10`
		if members == "" {
			in = `{"limit":10`
		}
		if cursor != "" {
			in += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		res, ok := call(t, s, "workbench_search", in+"}")
		if !ok && res["code"] == "ReadFenceChanged" && tries < 5 {
			tries++
			out, cursor = nil, ""
			continue
		}
		if !ok {
			t.Fatalf("search %s: %v", in, res)
		}
		for _, m := range res["matches"].([]any) {
			out = append(out, m.(map[string]any))
		}
		next, _ := res["next_cursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

func TestRestoreFromCommitAndSnapshot(t *testing.T) {
	s := newService(t)
	commit := restoreSource(t, s, "src", 12)
	snap := mintSnapshot(t, s, "src")
	// A later write is in neither source.
	putText(t, s, "src", "late.txt", "late")

	res := mustCall(t, s, "workbench_restore", restoreIn("src", "from-commit", fmt.Sprintf(`"at_commit":%q`, commit)))
	transcriptShape(t, "workbench_restore", res)
	if res["commit_id"] != commit || res["snapshot_id"] != nil || res["read_version"] != nil ||
		res["idempotent_replay"] != false || res["state"] != "complete" || res["destination_workbench_id"] != "from-commit" ||
		res["restore_manifest"] != "/agents/test/wb/from-commit/metadata/restore_manifest.json" {
		t.Fatalf("restore from commit = %v", res)
	}
	res2 := mustCall(t, s, "workbench_restore", restoreIn("src", "from-snap", fmt.Sprintf(`"at_snapshot":%d`, snap)))
	if res2["commit_id"] != nil || res2["snapshot_id"] == nil || res2["read_version"] == nil || res2["operation_id"] == res["operation_id"] {
		t.Fatalf("restore from snapshot = %v", res2)
	}

	src := treeOf(t, s, "src")
	for _, dst := range []string{"from-commit", "from-snap"} {
		got := treeOf(t, s, dst)
		for path, body := range src {
			if strings.HasPrefix(path, "metadata/") || path == "outputs/late.txt" {
				continue
			}
			if got[path] != body {
				t.Errorf("%s: %s = %s, source has %s", dst, path, got[path], body)
			}
		}
		if _, ok := got["outputs/late.txt"]; ok {
			t.Errorf("%s holds a file written after its source", dst)
		}
		// The restore manifest: exactly 7 keys, in order.
		man := readText(t, s, dst, "metadata/restore_manifest.json")
		var keys []string
		d := json.NewDecoder(strings.NewReader(man))
		d.Token()
		for d.More() {
			k, _ := d.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			d.Decode(&skip)
		}
		if got, want := strings.Join(keys, ","), "destination_path,destination_workbench_id,operation_id,restored_from,schema,source_path,source_workbench_id"; got != want {
			t.Errorf("%s restore manifest keys %s\n%s", dst, got, man)
		}
		run := readText(t, s, dst, "metadata/run_manifest.json")
		if !strings.Contains(run, `"workbench_id":"`+dst+`"`) || !strings.Contains(run, `"manifest":{"task":"restore-test"}`) {
			t.Errorf("%s run manifest %s", dst, run)
		}
	}
	// The commit's restore keeps the source's content digest; so does a
	// snapshot that froze exactly the head commit's tree.
	for _, dst := range []string{"from-commit", "from-snap"} {
		if run := readText(t, s, dst, "metadata/run_manifest.json"); !strings.Contains(run, digestAA) {
			t.Errorf("%s run manifest lost the content digest: %s", dst, run)
		}
	}
	workbench.CheckReferencesForTest(t, s)
	workbench.CheckCommitClosureForTest(t, s)
}

// readText reads a whole text file of workbench id.
func readText(t *testing.T, s *workbench.Service, id, rel string) string {
	t.Helper()
	sec, path, _ := strings.Cut(rel, "/")
	var out []byte
	cursor := ""
	for {
		in := fmt.Sprintf(`{"id":%q,"section":%q,"path":%q,"format":"bytes","limit":300`, id, sec, path)
		if cursor != "" {
			in += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		r := mustCall(t, s, "workbench_read", in+"}")
		b, err := base64.StdEncoding.DecodeString(r["bytes"].(string))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		next, _ := r["next_cursor"].(string)
		if next == "" {
			return string(out)
		}
		cursor = next
	}
}

func TestRestoreReplayAndConflicts(t *testing.T) {
	s := newService(t)
	commit := restoreSource(t, s, "src", 3)
	sel := fmt.Sprintf(`"at_commit":%q`, commit)
	first := mustCall(t, s, "workbench_restore", restoreIn("src", "dst", sel))
	again := mustCall(t, s, "workbench_restore", restoreIn("src", "dst", sel))
	if again["idempotent_replay"] != true || again["operation_id"] != first["operation_id"] || again["destination_generation"] != first["destination_generation"] {
		t.Fatalf("replay = %v, first %v", again, first)
	}
	// Another source onto the same destination: different provenance.
	other := restoreSource(t, s, "other", 2)
	got, ok := call(t, s, "workbench_restore", restoreIn("other", "dst", fmt.Sprintf(`"at_commit":%q`, other)))
	if ok || got["code"] != "Conflict" || got["message"] != "existing destination restore manifest belongs to different provenance" || got["retryable"] != true {
		t.Fatalf("other provenance: %v", got)
	}
	// A destination that is not a restore product.
	putText(t, s, "plain", "a.txt", "x")
	got, ok = call(t, s, "workbench_restore", restoreIn("src", "plain", sel))
	if ok || got["code"] != "Conflict" || got["message"] != "restore destination already exists without metadata/restore_manifest.json" {
		t.Fatalf("plain destination: %v", got)
	}
	// Unknown sources and bad arguments.
	for _, c := range []struct{ in, code string }{
		{restoreIn("nobody", "d2", sel), "NotFound"},
		{restoreIn("src", "d2", `"at_commit":"`+strings.Repeat("ab", 32)+`"`), "NotFound"},
		{restoreIn("src", "d2", `"at_snapshot":12345`), "SnapshotNotFound"},
		{restoreIn("src", "d2", `"at_snapshot":"no-such-name"`), "SnapshotNotFound"},
		{restoreIn("src", "src", sel), "InvalidArguments"},
		{restoreIn("src", "d2", sel+`,"at_snapshot":1`), "InvalidArguments"},
		{`{"id":"src","destination_id":"d2"}`, "InvalidArguments"},
		{restoreIn("src", "d2", `"at_commit":"`+strings.Repeat("zz", 32)+`"`), "InvalidArguments"},
		{restoreIn("src", "d2", `"at_commit":"`+strings.Repeat("00", 32)+`"`), "Conflict"},
	} {
		got, ok := call(t, s, "workbench_restore", c.in)
		if ok || got["code"] != c.code {
			t.Errorf("%s: %v, want %s", c.in, got, c.code)
		}
	}
	if _, ok := call(t, s, "workbench_stat", `{"id":"d2"}`); ok {
		t.Fatal("a refused restore left a destination")
	}
}

func TestRestoreExpiredSnapshot(t *testing.T) {
	s := newService(t)
	restoreSource(t, s, "src", 2)
	snap := mintSnapshot(t, s, "src")
	mustCall(t, s, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"src","snapshot_id":%d}`, snap))
	got, ok := call(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_snapshot":%d`, snap)))
	if ok || got["code"] != "SnapshotExpired" {
		t.Fatalf("restore of a retired snapshot: %v", got)
	}
	// While a restore consumes a snapshot, it cannot be retired.
	snap2 := mintSnapshot(t, s, "src")
	workbench.SetRestoreHookForTest(s, func(step string) error {
		if step == "prepare" {
			return errors.New("stop after prepare")
		}
		return nil
	})
	if _, ok := call(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_snapshot":%d`, snap2))); ok {
		t.Fatal("the hook did not stop the restore")
	}
	workbench.SetRestoreHookForTest(s, nil)
	got, ok = call(t, s, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"src","snapshot_id":%d}`, snap2))
	if ok || got["code"] != "ForkRetentionActive" {
		t.Fatalf("retire under a restore: %v", got)
	}
	mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_snapshot":%d`, snap2)))
	mustCall(t, s, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"src","snapshot_id":%d}`, snap2))
}

// TestRestoreChain: a restored workbench is committed, so it can be
// snapshotted and restored, and that one again.
func TestRestoreChain(t *testing.T) {
	s := newService(t)
	restoreSource(t, s, "a", 4)
	prev := "a"
	for i, dst := range []string{"b", "c", "d"} {
		snap := mintSnapshot(t, s, prev)
		res := mustCall(t, s, "workbench_restore", restoreIn(prev, dst, fmt.Sprintf(`"at_snapshot":%d`, snap)))
		if res["state"] != "complete" {
			t.Fatalf("step %d: %v", i, res)
		}
		if got, want := treeOf(t, s, dst)["outputs/dir1/f001.txt"], treeOf(t, s, "a")["outputs/dir1/f001.txt"]; got != want || got == "" {
			t.Fatalf("step %d: %s holds %q, want %q", i, dst, got, want)
		}
		prev = dst
	}
	mintSnapshot(t, s, "d")
	// And from the restored workbench's own commit.
	found := mustCall(t, s, "workbench_find", `{"committed":true,"include_manifest":true,"limit":100}`)
	var commit string
	for _, m := range found["matches"].([]any) {
		if m := m.(map[string]any); m["workbench_id"] == "d" {
			commit, _ = m["commit_identity"].(string)
		}
	}
	if commit == "" {
		t.Fatalf("find gives no commit of d: %v", found)
	}
	res := mustCall(t, s, "workbench_restore", restoreIn("d", "e", fmt.Sprintf(`"at_commit":%q`, commit)))
	if res["commit_id"] != commit {
		t.Fatalf("restore of d's commit: %v", res)
	}
	if got, want := treeOf(t, s, "e")["outputs/dir2/f002.txt"], treeOf(t, s, "a")["outputs/dir2/f002.txt"]; got != want || got == "" {
		t.Fatalf("e holds %q, want %q", got, want)
	}
	workbench.CheckReferencesForTest(t, s)
	workbench.CheckCommitClosureForTest(t, s)
}

// TestRestoreRunManifestInBlocks: with inlining off, the rebuilt run
// manifest is staged in blocks like any body, owned by the final command,
// and its ledger goes once the restore landed.
func TestRestoreRunManifestInBlocks(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{InlineMax: -1})
	commit := restoreSource(t, s, "src", 3)
	mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
	if run := readText(t, s, "dst", "metadata/run_manifest.json"); !strings.Contains(run, `"workbench_id":"dst"`) {
		t.Fatalf("run manifest %s", run)
	}
	workbench.FlushCleanupForTest(s)
	if keys := listKeys(t, b, bodies.StagingPrefix(s.Store().Layout())); len(keys) != 0 {
		t.Fatalf("staging ledgers left: %v", keys)
	}
	workbench.CheckReferencesForTest(t, s)
	workbench.CheckCommitClosureForTest(t, s)
}

// TestRestoreCrashBetweenSteps stops a multi-batch restore after each of
// its commands in turn: in between nothing of the destination is visible
// to any read, query or the change feed, and an exact retry converges on
// the same result; no staging is left behind.
func TestRestoreCrashBetweenSteps(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(4)()
	const files = 10                   // 3 copy batches
	for stop := 1; stop <= 5; stop++ { // prepare, copy ×3, final
		t.Run(fmt.Sprint(stop), func(t *testing.T) {
			s := newService(t)
			commit := restoreSource(t, s, "src", files)
			in := restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))
			feed := readChanges(t, s, workbench.ChangesRequest{})
			n := 0
			workbench.SetRestoreHookForTest(s, func(step string) error {
				if n++; n == stop {
					return errors.New("crash after " + step)
				}
				return nil
			})
			got, ok := call(t, s, "workbench_restore", in)
			workbench.SetRestoreHookForTest(s, nil)
			if ok {
				t.Fatalf("the restore did not stop: %v", got)
			}
			if stop < 5 {
				for _, c := range []struct{ tool, in string }{
					{"workbench_stat", `{"id":"dst"}`},
					{"workbench_list", `{"id":"dst","section":"outputs"}`},
					{"workbench_read", `{"id":"dst","section":"outputs","path":"dir0/f000.txt"}`},
				} {
					if r, ok := call(t, s, c.tool, c.in); ok {
						t.Fatalf("%s of the staging destination: %v", c.tool, r)
					}
				}
				for _, m := range searchAll(t, s, "") {
					if m["workbench_id"] == "dst" {
						t.Fatalf("root search shows the staging destination")
					}
				}
				found := mustCall(t, s, "workbench_find", `{"limit":100}`)
				for _, m := range found["matches"].([]any) {
					if m.(map[string]any)["workbench_id"] == "dst" {
						t.Fatalf("find shows the staging destination")
					}
				}
				if ev := readChanges(t, s, workbench.ChangesRequest{Cursor: feed.NextCursor}).Events; len(ev) != 0 {
					t.Fatalf("the feed shows %d events of the staging restore: %+v", len(ev), ev)
				}
				// A write to the staging destination is refused.
				if r, ok := call(t, s, "workbench_put_file", `{"id":"dst","section":"outputs","path":"x.txt","text":"x"}`); ok || r["code"] != "Conflict" {
					t.Fatalf("write into the staging destination: %v", r)
				}
			}
			res := mustCall(t, s, "workbench_restore", in)
			if res["state"] != "complete" {
				t.Fatalf("retry: %v", res)
			}
			if want := stop == 5; res["idempotent_replay"] != want {
				t.Fatalf("retry after stop %d: idempotent_replay %v", stop, res["idempotent_replay"])
			}
			// The terminal result is one: a later retry replays it exactly.
			replay := mustCall(t, s, "workbench_restore", in)
			for k, v := range res {
				if k != "idempotent_replay" && fmt.Sprint(replay[k]) != fmt.Sprint(v) {
					t.Fatalf("replay %s = %v, the completing call said %v", k, replay[k], v)
				}
			}
			if replay["idempotent_replay"] != true {
				t.Fatalf("replay: %v", replay)
			}
			found := mustCall(t, s, "workbench_find", `{"committed":true,"limit":100}`)
			var ids []any
			for _, m := range found["matches"].([]any) {
				ids = append(ids, m.(map[string]any)["workbench_id"])
			}
			if fmt.Sprint(ids) != "[dst src]" {
				t.Fatalf("committed workbenches after the restore: %v", ids)
			}
			if got, want := len(treeOf(t, s, "dst")), files+2; got != want {
				t.Fatalf("destination holds %d files, want %d", got, want)
			}
			evs := readChanges(t, s, workbench.ChangesRequest{Cursor: feed.NextCursor}).Events
			if len(evs) != 1 || evs[0].Kind != "WorkspaceRestored" || evs[0].WorkbenchID != "dst" || evs[0].CommitID == nil || *evs[0].CommitID != commit {
				t.Fatalf("feed after the restore: %+v", evs)
			}
			// Every reference and seal adds up; the source commit has only
			// its workbench head as consumer again; no hold or lease is left.
			workbench.CheckReferencesForTest(t, s)
			workbench.CheckCommitClosureForTest(t, s)
			for id, c := range workbench.CommitsForTest(t, s) {
				if c.ConsumerCount != 1 {
					t.Fatalf("commit %s of %s has %d consumers, want its head only", id, c.WorkbenchID, c.ConsumerCount)
				}
			}
			if holds := workbench.ScanForTest(t, s, nokv.FamilyHistoryHold, nil); len(holds) != 0 {
				t.Fatalf("%d history holds left", len(holds))
			}
		})
	}
}

var _ = context.Background

// TestRestoreOperationCollisionAndMismatch: an operation row under the
// restore's id with another identity digest is a collision, one with the
// same identity but another initialization digest a mismatch; both fail
// closed and change nothing.
func TestRestoreOperationCollisionAndMismatch(t *testing.T) {
	s := newService(t)
	commit := restoreSource(t, s, "src", 2)
	in := restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))
	workbench.SetRestoreHookForTest(s, func(string) error { return errors.New("stop") })
	call(t, s, "workbench_restore", in)
	workbench.SetRestoreHookForTest(s, nil)
	id, op := workbench.RestoreOperationForTest(t, s, "dst")

	bad := op
	bad.IdentityDigest[31] ^= 1
	workbench.PutRestoreOperationForTest(t, s, id, bad)
	got, ok := call(t, s, "workbench_restore", in)
	if ok || got["code"] != "RestoreProtocolMismatch" || got["retryable"] != true || !strings.Contains(got["message"].(string), "collides") {
		t.Fatalf("collision: %v", got)
	}
	bad = op
	bad.InitializationDigest[0] ^= 1
	workbench.PutRestoreOperationForTest(t, s, id, bad)
	got, ok = call(t, s, "workbench_restore", in)
	if ok || got["code"] != "RestoreProtocolMismatch" || !strings.Contains(got["message"].(string), "different restore manifest") {
		t.Fatalf("mismatch: %v", got)
	}
	// Put back, the exact retry resumes and completes.
	workbench.PutRestoreOperationForTest(t, s, id, op)
	if res := mustCall(t, s, "workbench_restore", in); res["state"] != "complete" {
		t.Fatalf("resume: %v", res)
	}
}

// TestRestoreSnapshotAfterLaterWrites: a snapshot whose tree is not its
// base commit's gets a content digest derived from the frozen tree.
func TestRestoreSnapshotAfterLaterWrites(t *testing.T) {
	s := newService(t)
	restoreSource(t, s, "src", 2)
	putText(t, s, "src", "after-commit.txt", "x")
	snap := mintSnapshot(t, s, "src")
	mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_snapshot":%d`, snap)))
	run := readText(t, s, "dst", "metadata/run_manifest.json")
	var env map[string]any
	if err := json.Unmarshal([]byte(run), &env); err != nil {
		t.Fatal(err)
	}
	cd := env["content_digest_uri"].(string)
	if cd == digestAA || !strings.HasPrefix(cd, "sha256:") || len(cd) != 71 {
		t.Fatalf("content digest %s, want one derived from the frozen tree", cd)
	}
	if readText(t, s, "dst", "outputs/after-commit.txt") != "x" {
		t.Fatal("the snapshot's later file is missing")
	}
}

// TestRestoreAbort stops a restore after its second copy batch and aborts
// it, stopping the abort itself after each of its commands once: what the
// batches wrote is gone, every count adds up again, the source is
// released, the name is free for another restore, and the aborted
// restore's exact retry fails closed.
func TestRestoreAbort(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(4)()
	for _, source := range []string{"commit", "snapshot"} {
		for stopAbort := 0; stopAbort <= 4; stopAbort++ { // none, abort, clean ×2, cleaned
			t.Run(fmt.Sprint(source, stopAbort), func(t *testing.T) {
				s := newService(t)
				commit := restoreSource(t, s, "src", 10)
				sel := fmt.Sprintf(`"at_commit":%q`, commit)
				var snap uint64
				if source == "snapshot" {
					snap = mintSnapshot(t, s, "src")
					sel = fmt.Sprintf(`"at_snapshot":%d`, snap)
				}
				in := restoreIn("src", "dst", sel)
				holds := len(workbench.ScanForTest(t, s, nokv.FamilyHistoryHold, nil)) // the snapshot's own
				steps := 0
				workbench.SetRestoreHookForTest(s, func(step string) error {
					if steps++; steps == 3 { // prepare, copy, copy
						return errors.New("crash after the second copy batch")
					}
					return nil
				})
				if _, ok := call(t, s, "workbench_restore", in); ok {
					t.Fatal("the restore did not stop")
				}
				// A restore stopped between its commands is a state the
				// store may stay in: fsck finds it clean.
				workbench.FsckCleanForTest(t, s)
				n := 0
				workbench.SetRestoreHookForTest(s, func(step string) error {
					if n++; n == stopAbort {
						return errors.New("crash after " + step)
					}
					return nil
				})
				err := s.AbortRestore(context.Background(), "dst")
				// A stop after the last command (4) leaves nothing to resume.
				if stopAbort > 0 {
					if err == nil {
						t.Fatal("the abort did not stop")
					}
					workbench.SetRestoreHookForTest(s, nil)
					if err = nil; stopAbort < 4 {
						err = s.AbortRestore(context.Background(), "dst")
					}
				}
				workbench.SetRestoreHookForTest(s, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r, ok := call(t, s, "workbench_stat", `{"id":"dst"}`); ok {
					t.Fatalf("the aborted destination is visible: %v", r)
				}
				workbench.CheckReferencesForTest(t, s)
				workbench.CheckCommitClosureForTest(t, s)
				if rows := workbench.ScanForTest(t, s, nokv.FamilyRestoreMember, nil); len(rows) != 0 {
					t.Fatalf("%d restore members left", len(rows))
				}
				if rows := workbench.ScanForTest(t, s, nokv.FamilyHistoryHold, nil); len(rows) != holds {
					t.Fatalf("%d history holds, want the snapshot's own %d", len(rows), holds)
				}
				for id, c := range workbench.CommitsForTest(t, s) {
					if c.ConsumerCount != 1 {
						t.Fatalf("commit %s has %d consumers after the abort", id, c.ConsumerCount)
					}
				}
				if members := workbench.AllMembersForTest(t, s); members != 10+1 {
					t.Fatalf("%d commit members, want the source commit's 11 only", members)
				}
				// The exact retry of the aborted restore fails closed; an
				// abort of what is no longer a restore too.
				if got, ok := call(t, s, "workbench_restore", in); ok || got["code"] != "InvalidState" {
					t.Fatalf("retry of an aborted restore: %v", got)
				}
				var we *workbench.Error
				if err := s.AbortRestore(context.Background(), "dst"); !errors.As(err, &we) || we.Code != "InvalidState" {
					t.Fatalf("second abort: %v", err)
				}
				if source == "snapshot" {
					mustCall(t, s, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"src","snapshot_id":%d}`, snap))
				}
				// The name is free: another restore, or a write, takes it.
				other := restoreSource(t, s, "other", 2)
				mustCall(t, s, "workbench_restore", restoreIn("other", "dst", fmt.Sprintf(`"at_commit":%q`, other)))
				if got := len(treeOf(t, s, "dst")); got != 4 {
					t.Fatalf("the new restore holds %d files, want 4", got)
				}
				workbench.CheckReferencesForTest(t, s)
				workbench.CheckCommitClosureForTest(t, s)
			})
		}
	}
}

// TestRestoreConcurrentReplicas: two replicas run the same restore at
// once, in small batches; both answer the one terminal result and the
// counts add up.
func TestRestoreConcurrentReplicas(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(3)()
	_, rs := newReplicas(t, 2, workbench.Options{})
	commit := restoreSource(t, rs[0], "src", 12)
	in := restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))
	results := make([]map[string]any, len(rs))
	done := make(chan int)
	for i, s := range rs {
		go func() {
			defer func() { done <- i }()
			for try := 0; try < 20; try++ {
				out, ok := s.Call(context.Background(), "workbench_restore", []byte(in))
				var m map[string]any
				json.Unmarshal(out, &m)
				if ok {
					results[i] = m
					return
				}
				if m["retryable"] != true {
					results[i] = m
					return
				}
			}
		}()
	}
	<-done
	<-done
	for i, r := range results {
		if r == nil || r["state"] != "complete" || r["operation_id"] != results[0]["operation_id"] {
			t.Fatalf("replica %d: %v", i, r)
		}
	}
	if got := len(treeOf(t, rs[1], "dst")); got != 12+2 {
		t.Fatalf("destination holds %d files", got)
	}
	workbench.CheckReferencesForTest(t, rs[0])
	workbench.CheckCommitClosureForTest(t, rs[0])
}

// TestRestoreEmptyTree: a commit of a workbench that holds only its run
// manifest restores to the two manifests, with no copy batch.
func TestRestoreEmptyTree(t *testing.T) {
	s := newService(t)
	commit := restoreSource(t, s, "src", 0)
	var steps []string
	workbench.SetRestoreHookForTest(s, func(step string) error { steps = append(steps, step); return nil })
	mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
	if fmt.Sprint(steps) != "[prepare final]" {
		t.Fatalf("commands %v", steps)
	}
	tree := treeOf(t, s, "dst")
	if len(tree) != 2 || tree["metadata/restore_manifest.json"] == "" || tree["metadata/run_manifest.json"] == "" {
		t.Fatalf("tree %v", tree)
	}
	workbench.CheckCommitClosureForTest(t, s)
}

// at_commit is a commit id as the tools print it, 64 lowercase hex digits
// (facts.md 1.2: a malformed at_commit is InvalidArguments; 1.2 and 8
// render commit ids in lowercase hex): the upper-case spelling of an
// existing commit is refused like any other malformed one, and nothing
// is created.
func TestRestoreAtCommitIsLowercaseHex(t *testing.T) {
	s := newService(t)
	commit := restoreSource(t, s, "src", 2)
	for _, bad := range []string{strings.ToUpper(commit), strings.ToUpper(commit[:1]) + commit[1:], commit[:63] + "G", " " + commit[1:]} {
		got, ok := call(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, bad)))
		wantToolError(t, got, ok, "InvalidArguments", false, "at_commit must be 64 lowercase hexadecimal digits", map[string]any{})
	}
	if _, ok := call(t, s, "workbench_stat", `{"id":"dst"}`); ok {
		t.Fatal("a refused restore left a destination")
	}
	mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
}

// TestRestoreBatchesOfAnotherSize: two calls of one restore whose copy
// batches differ in size (replicas with different defaults) meet a
// cursor inside a batch; the later command goes on from the cursor
// instead of failing, and the destination is whole.
func TestRestoreBatchesOfAnotherSize(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(4)()
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	other := newServiceOn(t, b, workbench.Options{})
	commit := restoreSource(t, s, "src", 10)
	in := restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))
	copies := 0
	workbench.SetRestoreHookForTest(s, func(step string) error {
		if step != "copy" {
			return nil
		}
		if copies++; copies == 1 { // s placed members 0-3; other places 4-5 and stops
			restore := workbench.SetRestoreBatchForTest(2)
			defer restore()
			workbench.SetRestoreHookForTest(other, func(step string) error {
				if step == "copy" {
					return errors.New("stop after one copy batch")
				}
				return nil
			})
			if got, ok := call(t, other, "workbench_restore", in); ok {
				t.Errorf("the other call did not stop: %v", got)
			}
		}
		return nil
	})
	res := mustCall(t, s, "workbench_restore", in)
	if res["state"] != "complete" {
		t.Fatalf("restore: %v", res)
	}
	checkRestored(t, s, "dst", 10)
}

// TestRestoreOnEveryCore: with every range of a restore's work on every
// core cut to one item (its plan, the rows its copy commands encode
// ahead, the revisions they read ahead, the final command's keys), a
// restore of 60 files in copy commands of 16 places every file, counts
// every reference and seals a closed commit: under the race detector,
// the side-by-side paths of a large restore run at this size.
func TestRestoreOnEveryCore(t *testing.T) {
	defer workbench.SetParallelRangesForTest(1)()
	defer workbench.SetRestoreBatchForTest(16)()
	s := newService(t)
	commit := restoreSource(t, s, "src", 60)
	res := mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
	if res["state"] != "complete" {
		t.Fatalf("restore: %v", res)
	}
	checkRestored(t, s, "dst", 60)
}
