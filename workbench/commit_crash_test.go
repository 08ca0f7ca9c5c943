package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Crash injection at each bucket write of a commit: the staging ledger and
// blocks of the run manifest (the crash rig's four-byte blocks put the
// envelope in blocks), the engine's shard objects, the head. A hook that
// fails the k-th write, before or after it lands, stands for the process
// dying there. Whatever the step, the commit is either wholly invisible
// (no head, commit, operation or run manifest) or wholly there, and an
// exact retry then returns the commit's one terminal result.

const crashManifest = `{"run":"crash","steps":[1,2,3]}`

// commitWrites counts the bucket writes of one clean commit on a fresh rig.
func commitWrites(t *testing.T) int64 {
	r := newCrashRig(t)
	seedCrashTree(t, r)
	var n atomic.Int64
	r.fb.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		n.Add(1)
		return nil
	})})
	if _, werr := workbench.CommitAtForTest(r.s, "wb", crashManifest, digest01, false, 1700000000); werr != nil {
		t.Fatal(werr)
	}
	return n.Load()
}

func seedCrashTree(t *testing.T, r crashRig) {
	t.Helper()
	for _, p := range []string{"a.txt", "b/c.txt", "d.txt"} {
		mustCall(t, r.s, "workbench_put_file", putInput("wb", "outputs", p, `"text":"x"`))
	}
}

// commitVisible reports whether any part of a commit of "wb" is visible,
// and checks that it is all or nothing.
func commitVisible(t *testing.T, r crashRig) bool {
	t.Helper()
	parts := map[string]int{
		"commit":    len(workbench.ScanForTest(t, r.s, nokv.FamilyCommit, nil)),
		"head":      len(workbench.ScanForTest(t, r.s, nokv.FamilyWorkbenchCommitHead, nil)),
		"members":   workbench.AllMembersForTest(t, r.s),
		"consumers": len(workbench.ScanForTest(t, r.s, nokv.FamilyCommitConsumer, nil)),
	}
	ops := 0
	for _, rec := range workbench.ScanForTest(t, r.s, nokv.FamilyOperation, nil) {
		if k, err := nokv.ParseOperationKey(rec.Key); err == nil && k.Kind == nokv.OperationKindBuildCommit {
			ops++
		}
	}
	parts["operation"] = ops
	if _, ok := workbench.PathForTest(t, r.s, "wb", "metadata/run_manifest.json"); ok {
		parts["run manifest"] = 1
	}
	seen, missing := []string{}, []string{}
	for k, n := range parts {
		if n > 0 {
			seen = append(seen, k)
		} else {
			missing = append(missing, k)
		}
	}
	if len(seen) > 0 && len(missing) > 0 {
		t.Fatalf("a partial commit is visible: %v present, %v absent", seen, missing)
	}
	return len(seen) > 0
}

func TestCommitCrashAtEachWrite(t *testing.T) {
	total := commitWrites(t)
	if total < 3 {
		t.Fatalf("a commit made only %d writes", total)
	}
	// What the tree's revisions do not decide is the same in every run
	// of a kind: a commit that landed before the crash keeps its first
	// commit time, 1700000000; one built again after it has the retry's,
	// 1700000100.
	reference := map[bool]map[string]any{false: {}, true: {}}
	for _, after := range []bool{false, true} {
		for k := int64(1); k <= total; k++ {
			t.Run(fmt.Sprintf("after=%t/write=%d", after, k), func(t *testing.T) {
				r := newCrashRig(t)
				seedCrashTree(t, r)
				var n atomic.Int64
				crash := func(context.Context, fault.Op, string) error {
					if n.Add(1) == k {
						return errCrash
					}
					return nil
				}
				f := fault.Hook(crash)
				if after {
					f = fault.HookAfter(crash)
				}
				r.fb.Inject(fault.Rule{Op: fault.OpPut, Fault: f})
				res, werr := workbench.CommitAtForTest(r.s, "wb", crashManifest, digest01, false, 1700000000)
				landed := commitVisible(t, r)
				if werr == nil && !landed {
					t.Fatalf("the commit succeeded but is not visible: %v", res)
				}
				r.fb.Clear()
				first, werr := workbench.CommitAtForTest(r.s, "wb", crashManifest, digest01, false, 1700000100)
				if werr != nil {
					t.Fatalf("retry: %v", werr)
				}
				if landed && first["idempotent_replay"] != true {
					t.Fatalf("the commit had landed but the retry built it again: %v", first)
				}
				again, werr := workbench.CommitAtForTest(r.s, "wb", crashManifest, digest01, false, 1700000200)
				if werr != nil || again["idempotent_replay"] != true {
					t.Fatalf("second retry: %v %v", again, werr)
				}
				for key, v := range first {
					if key != "idempotent_replay" && again[key] != v {
						t.Errorf("%s: retry %v, replay %v", key, v, again[key])
					}
				}
				for _, key := range []string{"commit_identity", "envelope_digest_uri", "size_bytes", "generation", "manifest_digest_uri"} {
					if want, ok := reference[landed][key]; ok && want != first[key] {
						t.Errorf("%s: %v, another run %v", key, first[key], want)
					}
					reference[landed][key] = first[key]
				}
				if !commitVisible(t, r) {
					t.Fatal("nothing visible after the retry")
				}
				if n := len(workbench.CommitsForTest(t, r.s)); n != 1 {
					t.Fatalf("%d commits", n)
				}
				env := workbench.BodyForTest(t, r.s, "wb", "metadata/run_manifest.json")
				at := `"committed_at_unix_seconds":1700000100,`
				if landed {
					at = `"committed_at_unix_seconds":1700000000,`
				}
				if !strings.Contains(string(env), at) || workbench.DigestURI(env) != first["envelope_digest_uri"] {
					t.Fatalf("run manifest %s", env)
				}
				workbench.CheckCommitClosureForTest(t, r.s)
				workbench.CheckReferencesForTest(t, r.s)
			})
		}
	}
	if len(reference[true]) == 0 || len(reference[false]) == 0 {
		t.Fatalf("the crashes did not cover both a landed and an unlanded commit: %v", reference)
	}
}
