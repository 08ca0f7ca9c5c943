package workbench_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// findRig: wb-a and wb-c committed, wb-b never committed.
func findRig(t *testing.T) (s *workbench.Service, commits map[string]map[string]any) {
	t.Helper()
	s = newService(t)
	commits = map[string]map[string]any{}
	commits["wb-a"] = mustCall(t, s, "workbench_commit", commitInput("wb-a", `{"task":"ptycho","model":"viking"}`, digest01))
	mustCall(t, s, "workbench_put_file", putInput("wb-b", "outputs", "x.txt", `"text":"PTYCHO but not in a manifest"`))
	commits["wb-c"] = mustCall(t, s, "workbench_commit", commitInput("wb-c", `{"note":"Ünïcode","steps":[1,2]}`, digest02))
	return s, commits
}

func matchIDs(res map[string]any) []string {
	var ids []string
	for _, m := range res["matches"].([]any) {
		ids = append(ids, m.(map[string]any)["workbench_id"].(string))
	}
	return ids
}

func TestFindFilters(t *testing.T) {
	s, _ := findRig(t)
	all := mustCall(t, s, "workbench_find", `{}`)
	if got := matchIDs(all); !slices.Equal(got, []string{"wb-a", "wb-b", "wb-c"}) {
		t.Fatalf("all: %v", got)
	}
	if all["entry_count"] != json.Number("3") || all["match_count"] != json.Number("3") || all["truncated"] != false || all["next_cursor"] != nil || all["path"] != "/agents/test/wb" {
		t.Fatalf("all: %v", all)
	}
	for _, raw := range all["matches"].([]any) {
		m := raw.(map[string]any)
		// No manifest is read: every manifest field is null.
		for _, k := range []string{"manifest_path", "manifest_size_bytes", "manifest_generation", "content_digest_uri", "manifest_digest_uri", "commit_identity", "envelope_digest_uri", "manifest_summary", "manifest"} {
			if m[k] != nil {
				t.Errorf("%s: %s = %v without include_manifest", m["workbench_id"], k, m[k])
			}
		}
		if m["commit_identity_verified"] != false || m["committed"] != (m["workbench_id"] != "wb-b") {
			t.Errorf("%v", m)
		}
	}
	committed := mustCall(t, s, "workbench_find", `{"committed":true}`)
	if got := matchIDs(committed); !slices.Equal(got, []string{"wb-a", "wb-c"}) || committed["entry_count"] != json.Number("2") {
		t.Fatalf("committed: %v", committed)
	}
	// committed:false filters after the page: entry_count counts the page.
	uncommitted := mustCall(t, s, "workbench_find", `{"committed":false}`)
	if got := matchIDs(uncommitted); !slices.Equal(got, []string{"wb-b"}) || uncommitted["entry_count"] != json.Number("3") || uncommitted["match_count"] != json.Number("1") {
		t.Fatalf("uncommitted: %v", uncommitted)
	}
	if got := matchIDs(mustCall(t, s, "workbench_find", `{"committed":null}`)); len(got) != 3 {
		t.Fatalf("committed null: %v", got)
	}
}

func TestFindPattern(t *testing.T) {
	s, commits := findRig(t)
	for pattern, want := range map[string][]string{
		"PTYCHO":        {"wb-a"},         // a manifest value, ASCII case folded; wb-b's file does not count
		"Schema":        {"wb-a", "wb-c"}, // an envelope key
		"":              {"wb-a", "wb-c"}, // any workbench with a manifest
		"0202020202":    {"wb-c"},         // a digest
		"/AGENTS/TEST":  {"wb-a", "wb-c"}, // the workbench path
		"ÜNïCODE":       {"wb-c"},         // ASCII letters folded, the rest exact
		"üNïCODE":       nil,              // non-ASCII letters are not folded
		"ünïcode":       nil,
		`"steps":[1,2]`: {"wb-c"}, // canonical bytes
		"nowhere":       nil,
	} {
		in, _ := json.Marshal(map[string]any{"manifest_pattern": pattern})
		res := mustCall(t, s, "workbench_find", string(in))
		if got := matchIDs(res); !slices.Equal(got, want) {
			t.Errorf("pattern %q: %v, want %v", pattern, got, want)
		}
		if res["entry_count"] != json.Number("3") {
			t.Errorf("pattern %q: entry_count %v", pattern, res["entry_count"])
		}
		// A pattern reads and verifies the manifest, but does not return it.
		for _, raw := range res["matches"].([]any) {
			m := raw.(map[string]any)
			c := commits[m["workbench_id"].(string)]
			if m["manifest"] != nil || m["commit_identity_verified"] != true || m["commit_identity"] != c["commit_identity"] || m["envelope_digest_uri"] != c["envelope_digest_uri"] {
				t.Errorf("pattern %q: %v", pattern, m)
			}
		}
	}
}

func TestFindIncludeManifest(t *testing.T) {
	s, commits := findRig(t)
	res := mustCall(t, s, "workbench_find", `{"include_manifest":true,"committed":true,"limit":1}`)
	transcriptFindShape(t, res)
	m := res["matches"].([]any)[0].(map[string]any)
	c := commits["wb-a"]
	for _, k := range []string{"content_digest_uri", "manifest_digest_uri", "commit_identity", "envelope_digest_uri"} {
		if m[k] != c[k] {
			t.Errorf("%s: %v, commit said %v", k, m[k], c[k])
		}
	}
	if m["manifest_size_bytes"] != c["size_bytes"] || m["manifest_generation"] != json.Number("1") || m["commit_identity_verified"] != true ||
		m["manifest_path"] != "/agents/test/wb/wb-a/metadata/run_manifest.json" || m["path"] != "/agents/test/wb/wb-a" {
		t.Fatalf("match %v", m)
	}
	env := workbench.BodyForTest(t, s, "wb-a", "metadata/run_manifest.json")
	var want map[string]any
	if err := jsonUnmarshal(env, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m["manifest"], want) {
		t.Fatalf("manifest %v, want %v", m["manifest"], want)
	}
	sum := m["manifest_summary"].(map[string]any)
	if !reflect.DeepEqual(sum["manifest_keys"], []any{"model", "task"}) || sum["manifest_task"] != "ptycho" ||
		sum["schema"] != workbench.RunManifestSchema || sum["commit_identity"] != c["commit_identity"] || sum["workbench_id"] != "wb-a" {
		t.Fatalf("summary %v", sum)
	}
	// wb-c's manifest has no task.
	res = mustCall(t, s, "workbench_find", `{"manifest_pattern":"steps"}`)
	sum = res["matches"].([]any)[0].(map[string]any)["manifest_summary"].(map[string]any)
	if sum["manifest_task"] != nil || !reflect.DeepEqual(sum["manifest_keys"], []any{"note", "steps"}) {
		t.Fatalf("summary %v", sum)
	}
}

// transcriptFindShape checks a find result and its first match against the
// transcript's keys and types.
func transcriptFindShape(t *testing.T, res map[string]any) {
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
	want := tr.Success["workbench_find"]
	sameShape(t, "find", want, res)
	sameShape(t, "find match", want["matches"].([]any)[0].(map[string]any), res["matches"].([]any)[0].(map[string]any))
	wm := want["matches"].([]any)[0].(map[string]any)
	gm := res["matches"].([]any)[0].(map[string]any)
	sameShape(t, "manifest_summary", wm["manifest_summary"].(map[string]any), gm["manifest_summary"].(map[string]any))
}

func sameShape(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: keys %v, transcript %v", what, keysOf(got), keysOf(want))
	}
	for k, wv := range want {
		gv, ok := got[k]
		if !ok {
			t.Errorf("%s: key %s missing", what, k)
		} else if jsonType(gv) != jsonType(wv) && gv != nil && wv != nil {
			t.Errorf("%s: %s is %s, transcript %s", what, k, jsonType(gv), jsonType(wv))
		}
	}
}

func TestFindPaging(t *testing.T) {
	s, _ := findRig(t)
	var seen []string
	cursor := "null"
	for page := 0; ; page++ {
		res := mustCall(t, s, "workbench_find", fmt.Sprintf(`{"limit":2,"cursor":%s}`, cursor))
		seen = append(seen, matchIDs(res)...)
		if res["truncated"] != (res["next_cursor"] != nil) {
			t.Fatalf("truncated and next_cursor disagree: %v", res)
		}
		if res["next_cursor"] == nil {
			break
		}
		if page > 3 {
			t.Fatal("paging does not end")
		}
		cursor = fmt.Sprintf("%q", res["next_cursor"])
	}
	if !slices.Equal(seen, []string{"wb-a", "wb-b", "wb-c"}) {
		t.Fatalf("pages gave %v", seen)
	}
	// A page whose only entry is filtered out is empty but truncated.
	res := mustCall(t, s, "workbench_find", `{"limit":1,"manifest_pattern":"nowhere"}`)
	if res["match_count"] != json.Number("0") || res["entry_count"] != json.Number("1") || res["truncated"] != true {
		t.Fatalf("%v", res)
	}
	next := res["next_cursor"].(string)
	// A cursor serves only the committed filter it was minted under.
	got, ok := call(t, s, "workbench_find", fmt.Sprintf(`{"limit":1,"committed":true,"cursor":%q}`, next))
	if ok || got["code"] != "InvalidState" {
		t.Fatalf("foreign cursor: %v", got)
	}
	for _, bad := range []string{"", "x", next[:len(next)-2] + "AA"} {
		got, ok := call(t, s, "workbench_find", fmt.Sprintf(`{"cursor":%q}`, bad))
		if ok || got["code"] != "InvalidState" || !strings.Contains(got["message"].(string), "cursor") {
			t.Fatalf("cursor %q: %v", bad, got)
		}
	}
	if got, ok := call(t, s, "workbench_find", `{"limit":0}`); ok || got["code"] != "InvalidArguments" {
		t.Fatalf("limit 0: %v", got)
	}
}

// TestFindUnverifiable tampers with wb-a's run manifest: whatever is
// wrong, the digest and identity fields are null and the identity is not
// verified, while the summary still shows what is stored.
func TestFindUnverifiable(t *testing.T) {
	s, commits := findRig(t)
	good := workbench.BodyForTest(t, s, "wb-a", "metadata/run_manifest.json")
	var env map[string]any
	if err := jsonUnmarshal(good, &env); err != nil {
		t.Fatal(err)
	}
	canonical := func(m map[string]any) []byte {
		b, err := workbench.MarshalResult(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for key, val := range env {
			m[key] = val
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return canonical(m)
	}
	// A consistent envelope of wb-a for a commit that is not its head.
	otherManifest := `{"task":"elsewhere"}`
	otherDigest := workbench.DigestURI([]byte(otherManifest))
	notHead := with("manifest", json.RawMessage(otherManifest))
	var nh map[string]any
	if err := jsonUnmarshal(notHead, &nh); err != nil {
		t.Fatal(err)
	}
	nh["manifest_digest_uri"] = otherDigest
	nh["commit_identity"] = workbench.CommitIdentity("wb-a", digest01, otherDigest).String()
	notHead = canonical(nh)
	for name, body := range map[string][]byte{
		"not canonical":     append([]byte(" "), good...),
		"ninth key":         with("extra", "x"),
		"key missing":       with("committed_at_unix_seconds", nil),
		"schema":            with("schema", "nokv.workbench.run_manifest.v2"),
		"other workbench":   with("workbench_id", "wb-z"),
		"path":              with("workbench_path", "/agents/test/wb/wb-z"),
		"manifest digest":   with("manifest_digest_uri", digest02),
		"identity":          with("commit_identity", strings.Repeat("0", 64)),
		"not the head":      notHead,
		"float time":        with("committed_at_unix_seconds", json.Number("1.0")),
		"manifest an array": with("manifest", []any{}),
	} {
		t.Run(name, func(t *testing.T) {
			workbench.OverwriteForTest(t, s, "wb-a", "metadata/run_manifest.json", body)
			res := mustCall(t, s, "workbench_find", `{"include_manifest":true,"limit":1}`)
			m := res["matches"].([]any)[0].(map[string]any)
			for _, k := range []string{"content_digest_uri", "manifest_digest_uri", "commit_identity", "envelope_digest_uri"} {
				if m[k] != nil {
					t.Errorf("%s = %v for a tampered manifest", k, m[k])
				}
			}
			if m["commit_identity_verified"] != false || m["committed"] != true || m["manifest_size_bytes"] != json.Number(fmt.Sprint(len(body))) {
				t.Errorf("%v", m)
			}
			if m["manifest"] == nil || m["manifest_summary"] == nil {
				t.Errorf("a stored object envelope is still shown: %v", m)
			}
		})
	}
	// Restored, it verifies again.
	workbench.OverwriteForTest(t, s, "wb-a", "metadata/run_manifest.json", good)
	res := mustCall(t, s, "workbench_find", `{"include_manifest":true,"limit":1}`)
	if m := res["matches"].([]any)[0].(map[string]any); m["commit_identity_verified"] != true || m["commit_identity"] != commits["wb-a"]["commit_identity"] {
		t.Fatalf("%v", m)
	}
}

func TestFindSkipsStaging(t *testing.T) {
	s, _ := findRig(t)
	workbench.StageWorkbenchForTest(t, s, "wb-restoring")
	res := mustCall(t, s, "workbench_find", `{}`)
	if got := matchIDs(res); !slices.Equal(got, []string{"wb-a", "wb-b", "wb-c"}) || res["entry_count"] != json.Number("3") {
		t.Fatalf("%v", res)
	}
}
