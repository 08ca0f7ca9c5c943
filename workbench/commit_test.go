package workbench_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

var (
	digest01 = "sha256:" + strings.Repeat("01", 32)
	digest02 = "sha256:" + strings.Repeat("02", 32)
)

func commitInput(id, manifest, content string, replace ...bool) string {
	in := fmt.Sprintf(`{"id":%q,"manifest":%s,"content_digest_uri":%q`, id, manifest, content)
	if len(replace) > 0 {
		in += fmt.Sprintf(`,"replace":%t`, replace[0])
	}
	return in + "}"
}

// transcriptShape checks that result has exactly the keys of the
// transcript's example of tool, each with the same JSON type.
func transcriptShape(t *testing.T, tool string, result map[string]any) {
	t.Helper()
	raw, err := os.ReadFile("../../shared/reference/workbench/result-transcript.json")
	if err != nil {
		t.Skipf("transcript not available: %v", err)
	}
	var tr struct {
		Success map[string]map[string]any `json:"success"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatal(err)
	}
	want := tr.Success[tool]
	if len(want) != len(result) {
		t.Errorf("%s: %d keys %v, transcript has %d", tool, len(result), keysOf(result), len(want))
	}
	for k, wv := range want {
		gv, ok := result[k]
		if !ok {
			t.Errorf("%s: key %s missing", tool, k)
			continue
		}
		if jsonType(gv) != jsonType(wv) && gv != nil && wv != nil {
			t.Errorf("%s: %s is %s, transcript has %s", tool, k, jsonType(gv), jsonType(wv))
		}
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func TestCommitFirstReplayReplace(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_put_file", putInput("wb-main", "outputs", "report.txt", `"text":"hello"`))
	mustCall(t, s, "workbench_put_file", putInput("wb-main", "logs", "run.log", `"text":"line"`))

	first := mustCall(t, s, "workbench_commit", commitInput("wb-main", `{"task":"ptycho","model":"viking"}`, digest01))
	transcriptShape(t, "workbench_commit", first)
	if first["idempotent_replay"] != false || first["generation"] != json.Number("1") || first["replace"] != false {
		t.Fatalf("first commit: %v", first)
	}
	if first["path"] != "/agents/test/wb/wb-main/metadata/run_manifest.json" || first["workbench_path"] != "/agents/test/wb/wb-main" {
		t.Fatalf("paths: %v", first)
	}
	if want := workbench.CommitIdentity("wb-main", digest01, first["manifest_digest_uri"].(string)).String(); first["commit_identity"] != want {
		t.Fatalf("identity %v, want %s", first["commit_identity"], want)
	}
	// The stored run manifest is the envelope the result describes.
	env := workbench.BodyForTest(t, s, "wb-main", "metadata/run_manifest.json")
	if workbench.DigestURI(env) != first["envelope_digest_uri"] || json.Number(fmt.Sprint(len(env))) != first["size_bytes"] {
		t.Fatalf("stored envelope %s does not match %v", env, first)
	}
	var envelope map[string]any
	if err := jsonUnmarshal(env, &envelope); err != nil || len(envelope) != 8 || envelope["schema"] != workbench.RunManifestSchema {
		t.Fatalf("envelope %s: %v", env, err)
	}
	st := mustCall(t, s, "workbench_stat", `{"id":"wb-main","section":"metadata","path":"run_manifest.json"}`)
	if card := st["card"].(map[string]any); card["content_type"] != "application/json" {
		t.Fatalf("run manifest card %v", card)
	}

	// An exact retry: the same result, marked as a replay.
	again := mustCall(t, s, "workbench_commit", commitInput("wb-main", `{"model":"viking","task":"ptycho"}`, digest01))
	if again["idempotent_replay"] != true {
		t.Fatalf("retry not a replay: %v", again)
	}
	again["idempotent_replay"] = false
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("replay differs:\n%v\n%v", again, first)
	}

	// A different commit without replace conflicts; nothing moves.
	mustCall(t, s, "workbench_put_file", putInput("wb-main", "outputs", "more.txt", `"text":"more"`))
	got, ok := call(t, s, "workbench_commit", commitInput("wb-main", `{"task":"other"}`, digest01))
	if ok || got["code"] != "WorkbenchCommitConflict" || got["retryable"] != true ||
		got["message"] != "workbench already has a different commit head; set replace=true" || len(got["details"].(map[string]any)) != 0 {
		t.Fatalf("conflict: %v", got)
	}

	// replace advances the head, with the old head as parent.
	second := mustCall(t, s, "workbench_commit", commitInput("wb-main", `{"task":"other"}`, digest02, true))
	if second["generation"] != json.Number("2") || second["replace"] != true || second["idempotent_replay"] != false {
		t.Fatalf("replace: %v", second)
	}
	if second["tree_digest_uri"] == first["tree_digest_uri"] {
		t.Fatal("the tree changed but its digest did not")
	}
	commits := workbench.CommitsForTest(t, s)
	id1, _ := nokv.ParseCommitID(first["commit_identity"].(string))
	id2, _ := nokv.ParseCommitID(second["commit_identity"].(string))
	if c := commits[id2]; len(c.Parents) != 1 || c.Parents[0] != id1 || c.ConsumerCount != 1 || c.MemberCount != 4 {
		t.Fatalf("second commit %+v", c)
	}
	if c := commits[id1]; c.ConsumerCount != 1 || c.ConsumerEpoch != 3 || c.MemberCount != 3 {
		t.Fatalf("first commit after replace %+v (want the child as its one consumer, epoch 3)", c)
	}

	// The first commit's retry still replays its own result.
	old := mustCall(t, s, "workbench_commit", commitInput("wb-main", `{"task":"ptycho","model":"viking"}`, digest01))
	old["idempotent_replay"] = false
	if !reflect.DeepEqual(old, first) {
		t.Fatalf("replay after replace:\n%v\n%v", old, first)
	}
	// The same commit with another replace flag is another request.
	got, ok = call(t, s, "workbench_commit", commitInput("wb-main", `{"task":"ptycho","model":"viking"}`, digest01, true))
	if ok || got["code"] != "InvalidState" {
		t.Fatalf("replace flag changed on a retry: %v", got)
	}
	workbench.CheckCommitClosureForTest(t, s)
	workbench.CheckReferencesForTest(t, s)
}

func TestCommitCreatesWorkbench(t *testing.T) {
	s := newService(t)
	res := mustCall(t, s, "workbench_commit", commitInput("fresh", `{}`, digest01))
	if res["generation"] != json.Number("1") {
		t.Fatalf("%v", res)
	}
	list := mustCall(t, s, "workbench_list", `{"id":"fresh","section":"metadata"}`)
	if list["entry_count"] != json.Number("1") {
		t.Fatalf("metadata holds %v", list)
	}
	workbench.CheckCommitClosureForTest(t, s)
	workbench.CheckReferencesForTest(t, s)
}

// TestCommitCanonicalManifest checks the manifest's canonical form inside
// the stored envelope: sorted keys at every level, last duplicate wins,
// '<', '>', '&', U+2028 and non-ASCII raw, numbers as the reference
// prints them, arrays in order.
func TestCommitCanonicalManifest(t *testing.T) {
	s := newService(t)
	manifest := `{"z":1.0,"a":{"y":[3,[2,1],{"b":1,"a":2}],"x":"<a&b>\u2028é"},"big":18446744073709551615,"neg":-12,"e":1e21,"dup":1,"dup":2,"f":0.1}`
	res := mustCall(t, s, "workbench_commit", commitInput("wb", manifest, digest01))
	want := `{"a":{"x":"<a&b>` + "\u2028" + `é","y":[3,[2,1],{"a":2,"b":1}]},"big":18446744073709551615,"dup":2,"e":1e21,"f":0.1,"neg":-12,"z":1.0}`
	if res["manifest_digest_uri"] != workbench.DigestURI([]byte(want)) {
		t.Fatalf("manifest digest %v, want the digest of %s", res["manifest_digest_uri"], want)
	}
	env := string(workbench.BodyForTest(t, s, "wb", "metadata/run_manifest.json"))
	if !strings.Contains(env, `"manifest":`+want+`,"manifest_digest_uri"`) {
		t.Fatalf("envelope %s does not carry %s", env, want)
	}
	if !strings.HasPrefix(env, `{"commit_identity":"`) || !strings.HasSuffix(env, `"workbench_id":"wb","workbench_path":"/agents/test/wb/wb"}`) {
		t.Fatalf("envelope key order: %s", env)
	}
	// Whitespace and key order of the input do not change the identity.
	again := mustCall(t, s, "workbench_commit", commitInput("wb", strings.ReplaceAll(manifest, ",", " ,\n "), digest01))
	if again["idempotent_replay"] != true {
		t.Fatalf("the same manifest written otherwise is not a replay: %v", again)
	}
}

func TestCommitRejectsBadInput(t *testing.T) {
	s := newService(t)
	for _, in := range []string{
		commitInput("wb", `{}`, "sha256:"+strings.Repeat("A", 64)),
		commitInput("wb", `{}`, "sha256:"+strings.Repeat("0", 63)),
		commitInput("wb", `[]`, digest01),
		commitInput("bad id", `{}`, digest01),
		`{"id":"wb","manifest":{}}`,
	} {
		got, ok := call(t, s, "workbench_commit", in)
		if ok || got["code"] != "InvalidArguments" {
			t.Errorf("%s: %v", in, got)
		}
	}
	// Nothing was created.
	if got, ok := call(t, s, "workbench_stat", `{"id":"wb"}`); ok {
		t.Fatalf("a refused commit created the workbench: %v", got)
	}
}

// TestCommitConcurrent: replicas committing at once. The same commit
// lands once and every caller gets its result (the others as replays);
// different commits onto one fresh workbench: one wins, the others
// conflict and change nothing.
func TestCommitConcurrent(t *testing.T) {
	_, services := newReplicas(t, 3, workbench.Options{})
	mustCall(t, services[0], "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"a"`))
	results := make([]map[string]any, len(services))
	done := make(chan int)
	for i, s := range services {
		go func() {
			out, _ := s.Call(t.Context(), "workbench_commit", []byte(commitInput("wb", `{"same":true}`, digest01)))
			if err := jsonUnmarshal(out, &results[i]); err != nil {
				t.Error(err)
			}
			done <- i
		}()
	}
	for range services {
		<-done
	}
	fresh := 0
	for _, r := range results {
		if r["status"] != "success" {
			t.Fatalf("identical commit failed: %v", r)
		}
		if r["idempotent_replay"] == false {
			fresh++
		}
		if r["commit_identity"] != results[0]["commit_identity"] || r["envelope_digest_uri"] != results[0]["envelope_digest_uri"] || r["tree_digest_uri"] != results[0]["tree_digest_uri"] {
			t.Fatalf("results differ: %v %v", r, results[0])
		}
	}
	if fresh != 1 {
		t.Fatalf("%d callers built the commit, want 1", fresh)
	}

	for i, s := range services {
		go func() {
			out, _ := s.Call(t.Context(), "workbench_commit", []byte(commitInput("other", fmt.Sprintf(`{"who":%d}`, i), digest01)))
			results[i] = nil
			if err := jsonUnmarshal(out, &results[i]); err != nil {
				t.Error(err)
			}
			done <- i
		}()
	}
	for range services {
		<-done
	}
	won := 0
	for _, r := range results {
		switch {
		case r["status"] == "success":
			won++
		case r["code"] != "WorkbenchCommitConflict" || r["retryable"] != true:
			t.Fatalf("loser: %v", r)
		}
	}
	if won != 1 {
		t.Fatalf("%d different commits won", won)
	}
	workbench.CheckCommitClosureForTest(t, services[0])
	workbench.CheckReferencesForTest(t, services[0])
}

func TestCommitFileLimit(t *testing.T) {
	s := newService(t)
	workbench.SetMaxCommitMembersForTest(t, 3)
	for _, p := range []string{"a", "b", "c"} {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", p, `"text":"x"`))
	}
	// Three files and the run manifest: four members.
	got, ok := call(t, s, "workbench_commit", commitInput("wb", `{}`, digest01))
	if ok || got["code"] != "ResourceExhausted" || got["retryable"] != false {
		t.Fatalf("%v", got)
	}
	if n := len(workbench.CommitsForTest(t, s)); n != 0 {
		t.Fatalf("%d commits written", n)
	}
	workbench.SetMaxCommitMembersForTest(t, 4)
	mustCall(t, s, "workbench_commit", commitInput("wb", `{}`, digest01))
}
