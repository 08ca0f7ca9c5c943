package workbench

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The commit digests against testdata/history-vectors.json, which
// testdata/history_vectors.py computes independently with hashlib; and
// the reference transcript's own values.

func loadHistoryVectors(t *testing.T) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/history-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func hex32(t *testing.T, s any) (out [32]byte) {
	t.Helper()
	b, err := hex.DecodeString(s.(string))
	if err != nil || len(b) != 32 {
		t.Fatalf("bad 32-byte hex %v", s)
	}
	copy(out[:], b)
	return out
}

func hex16(t *testing.T, s any) (out [16]byte) {
	t.Helper()
	b, err := hex.DecodeString(s.(string))
	if err != nil || len(b) != 16 {
		t.Fatalf("bad 16-byte hex %v", s)
	}
	copy(out[:], b)
	return out
}

func TestHistoryVectors(t *testing.T) {
	vs := loadHistoryVectors(t)

	v := vs["transcript_commit_identity"]
	// The reference transcript's commit of wb-main.
	if v["commit_identity"] != "4ee4c2a33b23f7b094d497d8ce284816b0db8cfebfe2cefb6e28ba8893e06df7" {
		t.Fatalf("vector file disagrees with the transcript: %v", v["commit_identity"])
	}
	if got := core.CommitIdentity(v["workbench_id"].(string), v["content_digest_uri"].(string), v["manifest_digest_uri"].(string)); got.String() != v["commit_identity"] {
		t.Fatalf("commit identity %s, want %s", got, v["commit_identity"])
	}

	v = vs["transcript_find_envelope"]
	canon := []byte(v["canonical_manifest"].(string))
	md := core.DigestURI(canon)
	id := core.CommitIdentity("wb-main", v["content_digest_uri"].(string), md)
	env, err := core.RunManifestEnvelope("wb-main", v["workbench_path"].(string), v["content_digest_uri"].(string), canon, md, id, 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	if md != v["manifest_digest_uri"] || id.String() != v["commit_identity"] || string(env) != v["envelope"] || core.DigestURI(env) != v["envelope_digest_uri"] {
		t.Fatalf("envelope:\n%s\n%v", env, v)
	}
	// The transcript's find match of wb-main.
	if core.DigestURI(env) != "sha256:dd01f7d8664ac3ee857bd5b59a57aa97eb5d8ec1024f5df73fdc1a1f028d1bf7" || len(env) != 472 ||
		id.String() != "9f3a0a156b426292b0791551b05f6d53f53b906cf7327065b92a04a18b834cff" {
		t.Fatalf("the transcript's envelope is not reproduced: %s", env)
	}

	v = vs["projection_input_digest"]
	pid := core.ProjectionInputDigest(v["workbench_id"].(string), v["workbench_path"].(string), v["content_digest_uri"].(string),
		[]byte(v["canonical_manifest"].(string)), v["manifest_digest_uri"].(string), nokv.CommitID(hex32(t, v["commit_identity"])))
	if hex.EncodeToString(pid[:]) != v["digest"] {
		t.Fatalf("projection input digest %x, want %v", pid, v["digest"])
	}

	v = vs["build_commit_initialization_v5"]
	gen := uint64(v["run_manifest_generation"].(float64))
	head := nokv.CommitID(hex32(t, v["head_commit"]))
	in := core.BuildCommitInit{
		ProjectionInput: hex32(t, v["projection_input_digest"]),
		Incarnation:     nokv.IncarnationID(hex16(t, v["incarnation"])),
		ReadVersion:     uint64(v["read_version"].(float64)),
		Head:            &nokv.CommitHeadRef{Commit: head, Generation: uint64(v["head_generation"].(float64))},
		ContentDigest:   v["content_digest_uri"].(string),
		ManifestDigest:  v["manifest_digest_uri"].(string),
		TreeRevision:    nokv.RevisionID(hex16(t, v["tree_revision"])),
		Replace:         v["replace"].(bool),
		RunManifestGen:  &gen,
		CommittedAt:     uint64(v["committed_at_unix_seconds"].(float64)),
		Parents:         []nokv.CommitID{head},
	}
	if d := in.Digest(); hex.EncodeToString(d[:]) != v["digest"] {
		t.Fatalf("initialization digest %x, want %v", d, v["digest"])
	}
	in.Head, in.Replace, in.RunManifestGen, in.Parents = nil, false, nil, nil
	if d := in.Digest(); hex.EncodeToString(d[:]) != v["digest_first_commit"] {
		t.Fatalf("first-commit initialization digest %x, want %v", d, v["digest_first_commit"])
	}

	v = vs["commit_member_digest"]
	type entry struct {
		key  []byte
		path []string
		m    nokv.CommitMember
	}
	var members []entry
	for _, raw := range v["members"].([]any) {
		m := raw.(map[string]any)
		var path []string
		for _, c := range m["path"].([]any) {
			path = append(path, c.(string))
		}
		cm := nokv.CommitMember{
			Revision: nokv.RevisionID(hex16(t, m["revision"])), PathGeneration: uint64(m["generation"].(float64)),
			LogicalSize: uint64(m["size"].(float64)), BodyDigestURI: m["body_digest_uri"].(string),
			ManifestDigestURI: m["manifest_digest_uri"].(string), DependencyCount: uint32(m["dependency_count"].(float64)),
			DependencyDepth: uint32(m["dependency_depth"].(float64)), ContentType: m["content_type"].(string),
		}
		if p, ok := m["producer"].(string); ok {
			cm.Producer = &p
		}
		key, err := nokv.PathCurrentKey{Path: path}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, entry{key, path, cm})
	}
	// The members are listed out of key order on purpose: the digest
	// takes them in key order, as the commit command scans them, which
	// is not the order of their "/"-joined text.
	slices.SortFunc(members, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	// Both digesters: the one that holds every member until Sum, and the
	// one that hashes each as it comes, given the count.
	for _, d := range []interface {
		Add([]string, nokv.CommitMember) error
		Sum() [32]byte
	}{core.NewMemberDigester(), core.NewMemberDigesterOf(uint64(len(members)))} {
		for i, e := range members {
			if strings.Join(e.path, "/") != v["order"].([]any)[i] {
				t.Fatalf("member %d is %v, the script orders %v", i, e.path, v["order"])
			}
			if err := d.Add(e.path, e.m); err != nil {
				t.Fatal(err)
			}
		}
		if got := d.Sum(); hex.EncodeToString(got[:]) != v["digest"] || (nokv.Commit{MemberDigest: got}).TreeDigestURI() != v["tree_digest_uri"] {
			t.Fatalf("member digest %x, want %v", got, v["digest"])
		}
	}

	v = vs["commit_revision_digest"]
	var revs []nokv.RevisionID
	for _, r := range v["revisions"].([]any) {
		revs = append(revs, hex16(t, r))
	}
	if got := core.RevisionDigest(revs); hex.EncodeToString(got[:]) != v["digest"] {
		t.Fatalf("revision digest %x, want %v", got, v["digest"])
	}
	v = vs["commit_parent_digest"]
	if got := core.ParentDigest([]nokv.CommitID{hex32(t, v["parents"].([]any)[0])}); hex.EncodeToString(got[:]) != v["digest"] {
		t.Fatalf("parent digest %x", got)
	}
	if got := core.ParentDigest(nil); hex.EncodeToString(got[:]) != v["digest_none"] {
		t.Fatalf("empty parent digest %x", got)
	}
	v = vs["build_commit_operation_id"]
	if got := core.BuildCommitOperationID(hex16(t, v["root"]), hex32(t, v["commit"])); got.String() != v["operation_id"] {
		t.Fatalf("operation id %s, want %v", got, v["operation_id"])
	}
}

// TestTranscriptFindEnvelopeStored commits the transcript's find example
// at its commit time and checks the stored run manifest byte for byte.
func TestTranscriptFindEnvelopeStored(t *testing.T) {
	s, err := Open(t.Context(), mem.NewBucket(), core.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, werr := CommitAtForTest(s, "wb-main", `{"model":"viking","task":"ptycho"}`, "sha256:"+strings.Repeat("01", 32), false, 1700000000)
	if werr != nil {
		t.Fatal(werr)
	}
	if res["envelope_digest_uri"] != "sha256:dd01f7d8664ac3ee857bd5b59a57aa97eb5d8ec1024f5df73fdc1a1f028d1bf7" || res["size_bytes"] != json.Number("472") {
		t.Fatalf("%v", res)
	}
	body := BodyForTest(t, s, "wb-main", "metadata/run_manifest.json")
	if core.DigestURI(body) != res["envelope_digest_uri"] {
		t.Fatalf("stored %s", body)
	}
}
